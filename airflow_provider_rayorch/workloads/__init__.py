"""Real workloads built on the engine: document parsing and video clipping.

- :mod:`.documents`: ``DocumentPipeline`` (pypdfium2 + rapidocr-onnxruntime, CPU)
- :mod:`.video`: ``VideoPipeline`` (PyAV + numpy, CPU)
- :mod:`.adapters`: MinerU, Docling and VLM-caption UDFs (optional extras)
- :mod:`.samples`: synthetic inputs with known content, for tests and demos

Importing this package (or a pipeline module) imports no optional dependency;
UDFs import theirs when an actor builds them and name the extra to install when
one is missing. See ``docs/workloads/``.
"""
