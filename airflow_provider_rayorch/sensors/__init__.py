"""sensors of the RayOrch Airflow provider."""
