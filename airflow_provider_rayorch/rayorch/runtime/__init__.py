"""The runtime core: lineage state, FIFO ready queues, commit and recovery.

Pure Python: no ray, no airflow, no I/O and no sleeping. Executors feed it
events and carry out the commands it returns.
"""
