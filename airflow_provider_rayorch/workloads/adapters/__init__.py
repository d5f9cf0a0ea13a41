"""Adapters for the models of the RayOrch paper, as UDFs that load once per actor.

- :mod:`.mineru`: MinerU page parsing (``pip install 'airflow-provider-rayorch[mineru]'``)
- :mod:`.docling`: Docling page conversion (``[docling]``)
- :mod:`.vlm`: clip captioning with a Qwen2.5-VL-style model via transformers (``[vlm]``)

Every adapter loads its model from a local directory and never downloads; a
missing package raises ``MissingDependencyError`` and a missing model directory
``MissingModelError``, each naming what to install or download. Importing this
package imports none of those libraries.
"""
