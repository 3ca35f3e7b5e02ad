"""For engineers: measuring CPU speed (appendices A1, A7, A8 and benchmarks/).

``timing.py`` (step timings), ``profiling.py`` (MindSpore's profiler, summarised) and ``fast_conv/`` (a custom
oneDNN convolution, Linux only).
"""
