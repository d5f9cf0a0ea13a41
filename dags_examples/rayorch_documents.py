"""The README's main job: prepare real PDFs with OCR, one task per source microbatch.

``sample_pdfs`` writes four small PDFs (PDFium only, from the ``documents`` extra): a
three-page report, a memo whose second page is blank, an invoice, and a corrupt file.
``documents`` runs ``DocumentPipeline`` (pypdfium2 rendering, rapidocr detection and
recognition) on them, two per microbatch, on the machine's shared loopback Ray head
(found, or started once for the runs starting together; ``scripts/main-job.sh`` stops
the one it started when the run ends). The corrupt file FAILS with its cause;
``max_failed_ratio=0.5`` tolerates it (one of the two sources of its microbatch). The
blank page is skipped: its document is still PRESENT. ``publish`` writes one markdown
file per document beside the run's Parquet outputs and HTML report, and returns their
paths, the recognized text and the failures, each named by its file.

Inputs and runs go under ``$RAYORCH_EXAMPLES_OUTPUT`` (``scripts/main-job.sh`` sets it to
``./rayorch-output``); unset, inputs go under ``$AIRFLOW_HOME/rayorch-examples`` and
runs into the connection's run store.
"""

from __future__ import annotations

from typing import Any

import pendulum
from airflow.sdk import DAG, task
from rayorch_example_outputs import examples_output

from airflow_provider_rayorch.operators.microbatch import rayorch_microbatch_group

INPUTS, RUN_STORE = examples_output()
PDF_DIR = f"{INPUTS}/documents"

with DAG(
    dag_id="rayorch_documents",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    tags=["rayorch", "example"],
    doc_md=__doc__,
):

    @task
    def sample_pdfs() -> dict[str, str]:
        """Write the sample PDFs (the corrupt one included); returns name -> path."""
        from airflow_provider_rayorch.workloads.samples import write_sample_documents

        return write_sample_documents(PDF_DIR)

    documents = rayorch_microbatch_group(
        "documents",
        pipeline="airflow_provider_rayorch.workloads.documents:DocumentPipeline",
        sources=f"{PDF_DIR}/*.pdf",
        input_batch_size=2,
        max_active_input_batches=2,
        max_failed_ratio=0.5,
        local_head="shared",
        # logical CPUs for the runs sharing the head (the first start decides)
        local_head_num_cpus=8,
        poke_interval=1.0,
        submit_kwargs={"run_store": RUN_STORE} if RUN_STORE else None,
    )

    @task
    def publish(summary: dict[str, Any]) -> dict[str, Any]:
        """Markdown per document beside the run's outputs; paths, text and failures."""
        from rayorch_example_outputs import publish_documents

        result = publish_documents(summary)
        for doc in result["documents"]:
            print(f"{doc['file']}: {doc['pages']} pages -> {doc['markdown']}")
        for failure in result["failures"]:
            print(f"{failure['file']}: {failure['outcome']}: {failure['cause']}")
        print(f"report: {result['report']}")
        return result

    sample_pdfs() >> documents
    publish(documents.get_child_by_label("run").output)
