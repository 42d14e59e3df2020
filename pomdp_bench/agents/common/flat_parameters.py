"""One contiguous buffer for all of a module's parameters, and one for their gradients.

PPO's networks are small (about 44k numbers in 16 tensors at the CartPoleNoVel
settings), so the per-tensor loops of an update cost more than its arithmetic:
zeroing 16 gradients, clipping with 16 norms, and the optimiser's bookkeeping
over 16 tensors. With every parameter a view into one flat tensor, and every
gradient a view into that tensor's gradient, each of the three is one operation
on one tensor. Measured at those settings (one thread): clipping 112 -> 18 µs and
Adam's step 110 -> 56 µs.

The module keeps its own ``nn.Parameter`` objects (names, ``state_dict``,
``load_state_dict`` and weight copying work unchanged); only their storage moves.
:class:`FlatAdam` is torch's fused Adam for that one tensor, without the
bookkeeping torch's ``step`` does per call for any number of parameter groups
(about 100 µs of a 3 ms PPO gradient step at those settings).

Anything that re-allocates a parameter afterwards (``module.to(other device)``,
cuDNN's weight flattening) breaks the aliasing, which :meth:`FlatParameters.check`
detects. The optimiser's in-place step on the flat tensor does not bump the
parameters' own version counters, so step only between a backward pass and the
next forward (the usual order), never between a forward and its backward.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
from torch import Tensor, nn

try:  # private torch API behind the lean step; a torch without it takes torch's own step
    from torch.optim.optimizer import _global_optimizer_post_hooks, _global_optimizer_pre_hooks
except ImportError:  # pragma: no cover - depends on the torch version
    _global_optimizer_post_hooks = _global_optimizer_pre_hooks = None


class FlatParameters:
    """All parameters of ``module`` as views into one flat ``nn.Parameter``.

    Give :attr:`param` to the optimiser in place of ``module.parameters()``; zero the
    gradients with :meth:`zero_grad` and clip them with :meth:`clip_grad_norm_`.
    Autograd accumulates each parameter's gradient in place into its view of
    ``param.grad``.

    Args:
        module: its parameters must share one device and dtype, and already be on
            the device they will train on.
    """

    def __init__(self, module: nn.Module) -> None:
        self.names: list[str] = []
        self._params: list[nn.Parameter] = []
        for name, p in module.named_parameters():
            self.names.append(name)
            self._params.append(p)
        if not self._params:
            raise ValueError(f"{type(module).__name__} has no parameters to flatten")
        kinds = {(p.device, p.dtype) for p in self._params}
        if len(kinds) != 1:
            raise ValueError(f"parameters must share one device and dtype to be flattened, got {kinds}")
        flat = torch.cat([p.detach().reshape(-1) for p in self._params])  # [N]
        self.param = nn.Parameter(flat)
        self.param.grad = torch.zeros_like(flat)
        self._grads: list[Tensor] = []
        offset = 0
        for p in self._params:
            n = p.numel()
            p.data = self.param.data[offset : offset + n].view_as(p)
            grad = self.param.grad[offset : offset + n].view_as(p)
            p.grad = grad
            self._grads.append(grad)
            offset += n
        self._data_ptrs = [p.data_ptr() for p in self._params]

    def zero_grad(self) -> None:
        """Zero every gradient (one fill), re-attaching any gradient view that was
        replaced (``module.zero_grad()`` sets them to ``None``)."""
        self.param.grad.zero_()
        for p, grad in zip(self._params, self._grads, strict=True):
            if p.grad is not grad:
                p.grad = grad

    def clip_grad_norm_(self, max_norm: float) -> Tensor:
        """Scale the gradients so their global 2-norm is at most ``max_norm``, as
        ``nn.utils.clip_grad_norm_``; returns the norm before clipping (a 0-d tensor)."""
        grad = self.param.grad
        norm = torch.linalg.vector_norm(grad)
        grad.mul_((max_norm / (norm + 1e-6)).clamp_(max=1.0))
        return norm

    def check(self) -> None:
        """Raise ``RuntimeError`` if a parameter no longer lives in the flat buffer
        (moved to another device or re-allocated after construction)."""
        for name, p, ptr in zip(self.names, self._params, self._data_ptrs, strict=True):
            if p.data_ptr() != ptr:
                raise RuntimeError(
                    f"parameter {name!r} was re-allocated after FlatParameters was built "
                    "(moved with .to()?); build the agent on the device it trains on"
                )

    def nonfinite(self) -> list[str]:
        """Names of the parameters holding a NaN or an infinity (empty when all are finite)."""
        if bool(torch.isfinite(self.param).all()):
            return []
        return [
            name
            for name, p in zip(self.names, self._params, strict=True)
            if not bool(torch.isfinite(p).all())
        ]


_LEAN_STEP_WORKS: bool | None = None  # decided once per process by lean_step_works()


def lean_step_works() -> bool:
    """Whether this torch has the private calls :class:`FlatAdam`'s lean step makes, and
    they give torch's fused Adam's numbers bit for bit (checked once, on 3 steps of a
    small probe). When not, every :class:`FlatAdam` step is torch's own: slower, never
    wrong."""
    global _LEAN_STEP_WORKS
    if _LEAN_STEP_WORKS is None:
        _LEAN_STEP_WORKS = False
        needed = (
            hasattr(torch, "_fused_adam_")
            and hasattr(torch, "_foreach_add_")
            and hasattr(torch.optim.Optimizer, "profile_hook_step")
            and _global_optimizer_pre_hooks is not None
        )
        if needed:
            try:
                _LEAN_STEP_WORKS = _probe_lean_step()
            except Exception:  # any failure of a private call means: do not use it
                _LEAN_STEP_WORKS = False
    return _LEAN_STEP_WORKS


def _probe_lean_step() -> bool:
    gen = torch.Generator().manual_seed(0)
    start = torch.randn(37, generator=gen)
    grads = [torch.randn(37, generator=gen) for _ in range(3)]
    lean = nn.Parameter(start.clone())
    reference = nn.Parameter(start.clone())
    lean_opt = FlatAdam(lean, lr=1e-2, lean=True)
    ref_opt = torch.optim.Adam([reference], lr=1e-2, fused=True)
    for grad in grads:
        lean.grad, reference.grad = grad.clone(), grad.clone()
        lean_opt.step()
        ref_opt.step()
    return bool(torch.equal(lean, reference))


class FlatAdam(torch.optim.Adam):
    """``torch.optim.Adam(fused=True)`` over one flat parameter, with a lean ``step``.

    The same numbers as torch's fused Adam, bit for bit, and the same
    ``state_dict``: after torch's first step has built the state, each step is
    torch's own two calls (count the step, then the fused kernel). Anything
    that needs torch's general path (a closure, step hooks, AMSGrad, maximise,
    a tensor learning rate, a missing gradient) takes it, and so does every step
    when :func:`lean_step_works` finds the private calls missing or different.

    Args:
        param: the one parameter, e.g. :attr:`FlatParameters.param`.
        lr: learning rate (a float; set ``param_groups[0]["lr"]`` to schedule it).
        eps: added to the denominator.
        betas: the running averages' coefficients.
        lean: take the lean step (default: where :func:`lean_step_works`).
    """

    def __init__(
        self,
        param: nn.Parameter,
        lr: float,
        eps: float = 1e-8,
        betas: tuple[float, float] = (0.9, 0.999),
        lean: bool | None = None,
    ) -> None:
        super().__init__([param], lr=lr, betas=betas, eps=eps, fused=True)
        self._param = param
        self.lean = lean_step_works() if lean is None else lean

    @torch.no_grad()
    def step(self, closure: Callable[[], float] | None = None) -> float | None:  # type: ignore[override]
        """One Adam step on the flat parameter (``closure``: as torch's)."""
        param, group = self._param, self.param_groups[0]
        state = self.state.get(param)
        general = (
            not self.lean
            or closure is not None
            or not state
            or param.grad is None
            or self._optimizer_step_pre_hooks
            or self._optimizer_step_post_hooks
            or _global_optimizer_pre_hooks
            or _global_optimizer_post_hooks
            or group["amsgrad"]
            or group["maximize"]
            or group.get("decoupled_weight_decay", False)
            or isinstance(group["lr"], Tensor)
        )
        if general:  # torch's step, with its hooks
            adam_step = torch.optim.Adam.step
            if not getattr(adam_step, "hooked", False):
                adam_step = torch.optim.Optimizer.profile_hook_step(adam_step)
            return adam_step(self, closure)
        beta1, beta2 = group["betas"]
        torch._foreach_add_([state["step"]], 1)
        torch._fused_adam_(
            [param],
            [param.grad],
            [state["exp_avg"]],
            [state["exp_avg_sq"]],
            [],
            [state["step"]],
            amsgrad=False,
            lr=group["lr"],
            beta1=beta1,
            beta2=beta2,
            weight_decay=group["weight_decay"],
            eps=group["eps"],
            maximize=False,
            grad_scale=None,
            found_inf=None,
        )
        return None

    # torch wraps an optimiser's step in a profiling label and a hook loop unless
    # it is marked as wrapped; that wrapper costs as much as the fused step. The
    # fast path above runs only when there are no hooks to call.
    step.hooked = True  # type: ignore[attr-defined]
