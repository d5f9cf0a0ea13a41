"""hooks of the RayOrch Airflow provider."""
