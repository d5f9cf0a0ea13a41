"""triggers of the RayOrch Airflow provider."""
