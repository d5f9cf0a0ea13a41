"""operators of the RayOrch Airflow provider."""
