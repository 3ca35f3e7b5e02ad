"""The training-step cells of lesson 04: the programming guide's hand-written ``TrainOneStepCell`` in MindSpore
2.10 spelling (with the gradient reducer that data parallel needs), and ``NetWithLoss``, a loss wrapper for
networks with several inputs and/or several losses (the blog post: the built-in ``nn.WithLossCell`` only fits
``(data, label)``). Standalone copies: recipes/custom_train_one_step_cell.py, recipes/net_with_loss_multi.py.

The chain is the same as inside ``Model``: backbone -> NetWithLoss (returns the loss) -> TrainOneStepCell
(differentiates that loss and runs the optimizer). Both work in graph mode (图模式) and PyNative mode.
Lesson 05 adds ``SegmentationEvalCell``, a custom eval network for ``Model(..., eval_network=...)``.
"""
import math
import numbers

import mindspore as ms
from mindspore import Parameter, Tensor, nn, ops

__all__ = ["TrainOneStepCell", "NetWithLoss", "SegmentationEvalCell"]


def _check_sens(value) -> float:
    """``sens`` scales the gradient of the loss (it seeds backpropagation); it must be a positive finite number."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real) or not math.isfinite(value) or value <= 0:
        raise ValueError(
            f"sens must be a positive finite number, got {value!r}. Fix: use 1.0 for the plain gradient, or a "
            "loss-scale factor such as 1024.0 (and divide it out of the gradients again)."
        )
    return float(value)


class TrainOneStepCell(nn.Cell):
    """One training step: ``loss = network(*inputs)``, gradients of ``loss * sens`` w.r.t. the optimizer's
    parameters, one optimizer update; returns the loss (computed before the update).

    The programming guide's hand-written cell in 2.10 spelling, with ``*inputs`` instead of ``(data, label)`` so it
    also drives a ``NetWithLoss`` with several inputs. ``network`` must return the loss as one Tensor, or a tuple
    whose FIRST element is the loss to differentiate (the other elements, e.g. the separate loss terms, are
    returned unchanged and get no gradient). Differences from ``nn.TrainOneStepCell``: ``set_sens`` also works
    after the first (compiled) step in graph mode, because ``sens`` is stored in a non-trainable Parameter named
    ``"sens"`` (so it appears in ``parameters_dict()``, like ``scale_sense`` of ``nn.TrainOneStepWithLossScaleCell``).
    Under data parallel (``DATA_PARALLEL``/``HYBRID_PARALLEL``, e.g. launched by msrun) it all-reduces the
    gradients across ranks with ``nn.DistributedGradReducer`` before the update (their mean when
    ``gradients_mean=True``), as ``nn.TrainOneStepCell`` does; ``reducer_flag`` tells whether it does.
    """

    def __init__(self, network, optimizer, sens=1.0):
        super().__init__(auto_prefix=False)
        if not isinstance(network, nn.Cell):
            raise TypeError(
                f"network must be a mindspore.nn.Cell that returns the loss, got {type(network).__name__}. "
                "Fix: wrap your model and loss first, e.g. nn.WithLossCell(net, loss_fn) or NetWithLoss(net, loss_fn)."
            )
        if not isinstance(optimizer, nn.Optimizer):
            raise TypeError(
                f"optimizer must be a mindspore.nn.Optimizer, got {type(optimizer).__name__}. "
                "Fix: pass e.g. nn.Momentum(net.trainable_params(), learning_rate=0.01, momentum=0.9)."
            )
        self.network = network
        self.network.set_grad()
        self.optimizer = optimizer
        # The gradients must line up one-to-one with what the optimizer updates, so take its own list
        # (the programming guide used ParameterTuple(network.trainable_params()), which is the same when the
        # optimizer was built from net.trainable_params()).
        self.weights = optimizer.parameters
        self.grad = ops.GradOperation(get_by_list=True, sens_param=True)
        # A Parameter, not a Python float: graph mode freezes Python attributes into the compiled graph,
        # so a float changed by set_sens after the first step would be silently ignored.
        self._sens = Parameter(Tensor(_check_sens(sens), ms.float32), name="sens", requires_grad=False)
        # Data parallel: every rank computes gradients on its own shard; the reducer all-reduces them (mean or
        # sum, as set by set_auto_parallel_context(gradients_mean=...)) so every rank applies the same update.
        # Public-API version of what nn.TrainOneStepCell reads with mindspore.parallel._utils.
        parallel_mode = ms.get_auto_parallel_context("parallel_mode")
        self.reducer_flag = parallel_mode in (ms.ParallelMode.DATA_PARALLEL, ms.ParallelMode.HYBRID_PARALLEL)
        self.grad_reducer = nn.Identity()
        if self.reducer_flag:
            from mindspore.communication import get_group_size
            mean = ms.get_auto_parallel_context("gradients_mean")
            self.grad_reducer = nn.DistributedGradReducer(self.weights, mean, get_group_size())

    @property
    def sens(self) -> float:
        """The current gradient scale (a Python float)."""
        return float(self._sens.asnumpy())

    def set_sens(self, value) -> None:
        """Change the gradient scale; takes effect from the next step, in graph and PyNative mode."""
        self._sens.set_data(Tensor(_check_sens(value), ms.float32))

    def construct(self, *inputs):
        outputs = self.network(*inputs)
        if isinstance(outputs, (tuple, list)):
            loss = outputs[0]
            sens = (ops.fill(loss.dtype, loss.shape, self._sens),)
            for extra in outputs[1:]:
                sens = sens + (ops.zeros_like(extra),)
        else:
            loss = outputs
            sens = ops.fill(loss.dtype, loss.shape, self._sens)
        grads = self.grad(self.network, self.weights)(*inputs, sens)
        grads = self.grad_reducer(grads)
        return ops.depend(outputs, self.optimizer(grads))


def _check_loss_fns(loss_fns):
    """Return (names, cells) from one Cell, a list/tuple of Cells, or a dict name -> Cell."""
    fix = ("Fix: pass one loss Cell (e.g. nn.SoftmaxCrossEntropyWithLogits(sparse=True, reduction='mean')), "
           "a list of them, or a dict such as {'cls': nn.SoftmaxCrossEntropyWithLogits(...), 'box': nn.L1Loss()}.")
    if isinstance(loss_fns, nn.Cell):
        names, cells = ["loss"], [loss_fns]
    elif isinstance(loss_fns, dict):
        names, cells = list(loss_fns.keys()), list(loss_fns.values())
        bad_names = [name for name in names if not isinstance(name, str) or not name]
        if bad_names:
            raise TypeError(f"loss_fns dict keys must be non-empty strings, got {bad_names!r}. {fix}")
    elif isinstance(loss_fns, (list, tuple)):
        cells = list(loss_fns)
        names = [f"loss{i}" for i in range(len(cells))]
    else:
        raise TypeError(f"loss_fns must be a Cell, a list/tuple of Cells or a dict of Cells, "
                        f"got {type(loss_fns).__name__}. {fix}")
    if not cells:
        raise ValueError(f"loss_fns is empty. {fix}")
    not_cells = [f"{name}: {type(cell).__name__}" for name, cell in zip(names, cells) if not isinstance(cell, nn.Cell)]
    if not_cells:
        raise TypeError(f"every loss function must be a mindspore.nn.Cell, got {', '.join(not_cells)}. "
                        "Fix: use a loss from mindspore.nn, or wrap your function in a small nn.Cell "
                        "whose construct(output, label) returns a scalar Tensor.")
    return names, cells


def _check_loss_weights(loss_weights, names):
    if loss_weights is None:
        return tuple(1.0 for _ in names)
    if isinstance(loss_weights, dict):
        if set(loss_weights) != set(names):
            raise ValueError(f"loss_weights keys must match the loss names {names}, got {sorted(loss_weights)}. "
                             "Fix: give one weight per loss, e.g. {" + ", ".join(f"'{n}': 1.0" for n in names) + "}.")
        loss_weights = [loss_weights[name] for name in names]
    elif not isinstance(loss_weights, (list, tuple)) or len(loss_weights) != len(names):
        raise ValueError(f"loss_weights must be a list/tuple with one number per loss ({len(names)}: {names}), "
                         f"got {loss_weights!r}. Fix: e.g. loss_weights={[1.0] * len(names)}.")
    weights = []
    for name, weight in zip(names, loss_weights):
        if isinstance(weight, bool) or not isinstance(weight, numbers.Real) or not math.isfinite(weight) or weight < 0:
            raise ValueError(f"loss weight for {name!r} must be a finite number >= 0, got {weight!r}.")
        weights.append(float(weight))
    return tuple(weights)


class NetWithLoss(nn.Cell):
    """Backbone + one or several losses -> one scalar Tensor to differentiate (a generalised ``nn.WithLossCell``).

    Call it with ``(*backbone_inputs, *labels)``: the first ``num_inputs`` arguments go to ``backbone``, the rest
    are labels. With losses ``loss_fns`` (a Cell, a list, or a dict name -> Cell) and weights ``w_i``
    (``loss_weights``, default all 1.0) it returns ``total = sum_i w_i * loss_i(output_i, label_i)``, where

    - ``output_i`` is the backbone's i-th output if it returns a tuple (one output per loss), or its single
      output shared by every loss;
    - ``label_i`` is the i-th label if there is one label per loss, or the single label shared by every loss.

    With ``return_terms=True`` it returns ``(total, loss_0, loss_1, ...)`` instead: ``total`` first, because
    ``TrainOneStepCell`` differentiates the first output and passes the terms through for logging.
    ``NetWithLoss(net, loss_fn)`` computes exactly what ``nn.WithLossCell(net, loss_fn)`` does.
    """

    def __init__(self, backbone, loss_fns, loss_weights=None, num_inputs=1, return_terms=False):
        super().__init__(auto_prefix=False)
        if not isinstance(backbone, nn.Cell):
            raise TypeError(f"backbone must be a mindspore.nn.Cell, got {type(backbone).__name__}. "
                            "Fix: pass the network whose outputs the losses compare with the labels.")
        names, cells = _check_loss_fns(loss_fns)
        if isinstance(num_inputs, bool) or not isinstance(num_inputs, int) or num_inputs < 1:
            raise ValueError(f"num_inputs must be a positive int (how many leading arguments go to the backbone), "
                             f"got {num_inputs!r}. Fix: e.g. num_inputs=2 for construct(self, image, mask).")
        if not isinstance(return_terms, bool):
            raise TypeError(f"return_terms must be True or False, got {return_terms!r}.")
        self._backbone = backbone
        self._loss_fns = nn.CellList(cells)
        self.loss_names = tuple(names)
        self.loss_weights = _check_loss_weights(loss_weights, names)
        self.num_inputs = num_inputs
        self.num_losses = len(cells)
        self.return_terms = return_terms
        self._get_attr_from_cell(backbone)

    @property
    def backbone_network(self):
        """The wrapped backbone (same property as ``nn.WithLossCell``)."""
        return self._backbone

    def construct(self, *inputs):
        num_labels = len(inputs) - self.num_inputs
        if num_labels != 1 and num_labels != self.num_losses:
            raise ValueError(f"NetWithLoss got {len(inputs)} arguments: {self.num_inputs} backbone input(s) leave "
                             f"{num_labels} label(s), but it needs 1 shared label or one per loss "
                             f"({self.num_losses}). Fix: check num_inputs and the dataset's columns.")
        outputs = self._backbone(*inputs[:self.num_inputs])
        labels = inputs[self.num_inputs:]
        several_outputs = isinstance(outputs, (tuple, list))
        if several_outputs and len(outputs) != self.num_losses:
            raise ValueError(f"The backbone returned {len(outputs)} outputs but there are {self.num_losses} "
                             f"loss function(s). Fix: give one loss per output, or return a single output.")
        terms = ()
        total = None
        for i in range(self.num_losses):
            output = outputs[i] if several_outputs else outputs
            label = labels[i] if num_labels > 1 else labels[0]
            term = self._loss_fns[i](output, label)
            terms = terms + (term,)
            weighted = self.loss_weights[i] * term
            total = weighted if total is None else total + weighted
        if self.return_terms:
            return (total,) + terms
        return total


class SegmentationEvalCell(nn.Cell):
    """Eval network for ``Model(..., eval_network=..., eval_indexes=[0, 1, 2])``: returns ``(loss, logits, label)``.

    Like ``nn.WithEvalCell``, plus the place for evaluation-only post-processing (the blog post's ``postprocess``):
    with ``flip_test=True`` the logits are the mean over the image and its left-right mirror (test-time
    augmentation, 测试时增强). ``logits`` are (N, C, H, W), ``label`` (N, H, W).
    """

    def __init__(self, network, loss_fn, flip_test=False):
        super().__init__(auto_prefix=False)
        if not isinstance(network, nn.Cell):
            raise TypeError(f"network must be a mindspore.nn.Cell, got {type(network).__name__}. "
                            "Fix: pass the segmentation network, e.g. course_lib.models.segmentation_fcn().")
        if not isinstance(loss_fn, nn.Cell):
            raise TypeError(f"loss_fn must be a mindspore.nn.Cell, got {type(loss_fn).__name__}. "
                            "Fix: e.g. nn.CrossEntropyLoss(ignore_index=255).")
        if not isinstance(flip_test, bool):
            raise TypeError(f"flip_test must be True or False, got {flip_test!r}. "
                            "Fix: flip_test=True to average with the mirrored image, False for plain logits.")
        self._network = network
        self._loss_fn = loss_fn
        self.flip_test = flip_test

    def construct(self, image, label):
        logits = self._network(image)
        if self.flip_test:
            mirrored = self._network(ops.flip(image, (3,)))
            logits = (logits + ops.flip(mirrored, (3,))) / 2
        return self._loss_fn(logits, label), logits, label
