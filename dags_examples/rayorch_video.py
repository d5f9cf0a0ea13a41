"""Video example: split generated clips at their shot cuts, keyframe each shot, one record per clip.

``sample_videos`` encodes two short videos with PyAV (the ``video`` extra): three
shots (a moving, a still and a moving one) and two moving shots, with hard cuts
between them. ``clips`` runs ``VideoPipeline`` on them on an embedded local Ray:
``SplitVideo`` cuts at the shot changes, ``DecodeClip`` samples frames of each shot,
``ScoreMotion`` drops the still shot, ``ExtractKeyframes`` picks each shot's sharpest
frame and describes it. ``clip_records`` flattens the videos into one record per
clip (``video``, ``clip``, ``start_s``, ``end_s``, ``keyframe_s``, ``motion``), in time
order, and returns them with the paths of the run's Parquet outputs and report.

Inputs and runs go where ``rayorch_documents`` puts them (``$RAYORCH_EXAMPLES_OUTPUT``).
"""

from __future__ import annotations

from typing import Any

import pendulum
from airflow.sdk import DAG, task
from rayorch_example_outputs import examples_output

from airflow_provider_rayorch.operators.rayorch import RayOrchOperator

INPUTS, RUN_STORE = examples_output()
VIDEO_DIR = f"{INPUTS}/videos"

with DAG(
    dag_id="rayorch_video",
    schedule=None,
    start_date=pendulum.datetime(2026, 1, 1, tz="UTC"),
    catchup=False,
    tags=["rayorch", "example"],
    doc_md=__doc__,
):

    @task
    def sample_videos() -> dict[str, str]:
        """Encode the sample videos; returns name -> path."""
        from airflow_provider_rayorch.workloads.samples import write_sample_videos

        return write_sample_videos(VIDEO_DIR)

    clips = RayOrchOperator(
        task_id="clips",
        pipeline="airflow_provider_rayorch.workloads.video:VideoPipeline",
        sources=f"{VIDEO_DIR}/*.mp4",
        input_batch_size=1,
        max_active_input_batches=2,
        run_store=RUN_STORE,
    )

    @task
    def clip_records(summary: dict[str, Any]) -> dict[str, Any]:
        """One record per kept clip, with the run's output and report paths."""
        from rayorch_example_outputs import clip_records as records

        result = records(summary)
        for clip in result["clips"]:
            print(f"{clip['video']} clip {clip['clip']}: {clip['start_s']}-{clip['end_s']} s")
        return result

    sample_videos() >> clips
    clip_records(clips.output)
