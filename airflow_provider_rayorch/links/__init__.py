"""links of the RayOrch Airflow provider."""
