"""Rules the Airflow layer's parts share (states, XCom keys); imports neither airflow nor ray."""
