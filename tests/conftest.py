import course_lib  # noqa: F401  (sets GLOG_v / ONEDNN_MAX_CPU_ISA before any test imports mindspore)
