"""vulture's whitelist: names that vulture reports as unused although something outside the scanned code calls or
reads them. Each line names one, with why it is alive. Read by tools/dead_code.py (and tests/test_dead_code.py),
never imported or run. vulture matches names, not places: one line covers every definition with that name.

An entry that vulture no longer reports (its code was deleted or gained a caller) fails tests/test_dead_code.py:
remove the line. Add a line only for code that really has a user vulture cannot see; delete dead code instead.
"""
# ruff: noqa: B018  (vulture's whitelist format: each line is a bare attribute access)
from vulture.whitelist_utils import Whitelist

_ = Whitelist()

# --- MindSpore calls these hooks by name (mindspore.train.Callback, nn.Cell, ops.Custom) ---------------------------
_.on_train_epoch_begin  # Callback hook that Model.train calls (train/callbacks.py, run/fit.py, benchmarks/worker.py)
_.on_train_step_begin  # Callback hook that Model.train calls (parallel/worker.py)
_.on_train_step_end  # Callback hook that Model.train calls (train/callbacks.py, run/fit.py, scripts, benchmarks)
_.on_train_end  # Callback hook that Model.train calls (train/callbacks.py ProgressBar)
_.on_eval_begin  # Callback hook that Model.eval calls (train/callbacks.py ProgressBar)
_.on_eval_step_end  # Callback hook that Model.eval calls (train/callbacks.py ProgressBar)
_.on_eval_end  # Callback hook that Model.eval calls (train/callbacks.py ProgressBar)
_.extend_repr  # nn.Cell hook: repr(cell) shows it (train/losses.py CrossEntropySmooth)
_.bprop  # nn.Cell hook: MindSpore's autodiff calls a Cell's custom backward by this name (perf/fast_conv)
_.cell_list  # read by nn.SequentialCell.construct; perf/fast_conv/_replace refreshes it after insert_child_to_cell

# --- other frameworks call these by name --------------------------------------------------------------------------
_._render_traceback_  # IPython calls it to show an exception without a traceback (migrate/convert.py)
_.pytest_xdist_make_scheduler  # pytest-xdist plugin hook (tools/nbval_groups.py)
_._split_scope  # overrides xdist's LoadScopeScheduling._split_scope (tools/nbval_groups.py)
_.seekable  # file protocol: zipfile calls it on RangeFile (tools/install_size.py)
_.tell  # file protocol: zipfile calls it on RangeFile (tools/install_size.py)
_.dwLength  # ctypes field that GlobalMemoryStatusEx reads (tools/preflight.py, Windows)
_.execution_count  # nbformat cell field the student edition clears (tools/make_editions.py)

# --- JupyterHub reads its configuration from the traitlets set on `c` (classroom/hub/jupyterhub_config.py) ---------
_.bind_url  # JupyterHub reads c.JupyterHub.bind_url
_.hub_ip  # JupyterHub reads c.JupyterHub.hub_ip
_.db_url  # JupyterHub reads c.JupyterHub.db_url
_.cookie_secret_file  # JupyterHub reads c.JupyterHub.cookie_secret_file
_.pid_file  # JupyterHub reads c.JupyterHub.pid_file / c.ConfigurableHTTPProxy.pid_file
_.authenticator_class  # JupyterHub reads c.JupyterHub.authenticator_class
_.allow_all  # JupyterHub reads c.Authenticator.allow_all
_.admin_users  # JupyterHub reads c.Authenticator.admin_users
_.open_signup  # JupyterHub reads c.NativeAuthenticator.open_signup
_.spawner_class  # JupyterHub reads c.JupyterHub.spawner_class
_.default_url  # JupyterHub reads c.Spawner.default_url
_.mem_limit  # JupyterHub reads c.Spawner.mem_limit
_.cpu_limit  # JupyterHub reads c.Spawner.cpu_limit
_.start_timeout  # JupyterHub reads c.Spawner.start_timeout
_.http_timeout  # JupyterHub reads c.Spawner.http_timeout
_.make_preexec_fn  # overrides LocalProcessSpawner.make_preexec_fn, which its start() calls (jupyterhub/spawner.py)
_.user_env  # overrides LocalProcessSpawner.user_env, which its get_env() calls (jupyterhub/spawner.py)

# --- called from code that runs in a child process, written as a string -------------------------------------------
_.time_jit_train_step  # perf/timing.py: the child script of time_step_in_subprocess(api="jit") calls it
_.time_variant  # benchmarks/fast_conv_bench.py: the per-variant child process calls b.time_variant(...)

# --- fields and read-outs of public results (read by learners and the tests, set by the library) -----------------
_.scheduler_log  # parallel/launch.py LaunchResult field: the text of msrun's scheduler.log
_.output_shape  # perf/profiling.py LayerFlops field: each layer's output shape, shown in its repr
_.confusion_matrix  # train/metrics.py MIoU: the pixel counts behind per_class_iou (named in its docstring)
_.held  # locks.py FolderLock: whether the lock is held now
_.locked  # train/checkpoint.py CheckpointManager: whether the folder's lock is held now

# --- learner API that the lessons' texts name (in __all__, so tools/dead_code.py checks it; no caller in code) ---
_.expected_steps  # data/stats.py: exercise 01.2's hint tells learners to predict shard sizes with it

# --- dead, left for the lead (changing it means regenerating a copy under notebooks/) ----------------------------
