"""Event-driven ingestion: which files a glob holds, what was emitted and what committed.

``listing`` lists a glob with sizes and mtimes, ``stable_files`` decides which files
have landed, ``watch_state`` names and checks what the asset state store holds, and
``new_sources`` turns a run's triggering asset events into its ``sources``.
The trigger itself is ``airflow_provider_rayorch.triggers.sources``.
"""
