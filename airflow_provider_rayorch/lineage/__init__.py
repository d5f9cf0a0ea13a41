"""Lineage of RayOrch runs: OpenLineage datasets and facets, and Airflow Asset events.

``naming`` names a run's input locations and outputs folder (the same names for
OpenLineage and for Airflow Assets), ``summary`` turns stored records into the
provider's ``rayorch`` run facet (schema in ``schema/RayOrchRunFacet.json``),
``openlineage`` and ``tasks`` build what each task reports when
``apache-airflow-providers-openlineage`` is installed, ``parent`` hands the Ray job
its parent run, and ``assets`` builds the outputs Asset event. Importing this
package imports neither Airflow nor OpenLineage (docs/airflow/lineage.md).
"""
