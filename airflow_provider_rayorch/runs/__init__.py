"""The run layer: a run store and its records, the driver (the Ray job's body),
repair, attempts and job states.

It sits between the engine (:mod:`airflow_provider_rayorch.rayorch`, which imports
nothing outside itself) and the Airflow layer; it imports neither airflow nor the
report renderer (the job's entrypoint hands the driver a report writer).
"""
