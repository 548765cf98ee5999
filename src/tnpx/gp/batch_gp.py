"""The GPyTorch half of the fitted GP baselines ``gp`` / ``mt-gp`` (registered in
:mod:`tnpx.models.gp_fit`): the masked kernel and noise and the batch of exact GPs, fit and
conditioned per call.

Imported by :mod:`tnpx.models.gp_fit` only when one of those models is built, so that
``import tnpx`` and the model registry need no GPyTorch (the ``gp`` extra,
``pip install 'tnpx[gp]'``).
"""

from __future__ import annotations

import warnings

import torch

with warnings.catch_warnings():  # linear_operator (through gpytorch) calls torch.jit.script
    warnings.filterwarnings("ignore", "`torch.jit.script` is deprecated", DeprecationWarning)
    import gpytorch
from gpytorch.kernels import IndexKernel, Kernel, RBFKernel, ScaleKernel
from gpytorch.likelihoods import GaussianLikelihood
from gpytorch.likelihoods.noise_models import MultitaskHomoskedasticNoise
from gpytorch.mlls import ExactMarginalLogLikelihood
from linear_operator import to_dense
from linear_operator.operators import DiagLinearOperator


class _MaskedKernel(Kernel):
    """``k((x, t, m), (x', t', m')) = m m' k_x(x, x') B[t, t']`` on rows ``[..., n, dim_x + 2]``;
    without a task kernel ``B = 1``."""

    def __init__(self, x_kernel: Kernel, task_kernel: IndexKernel | None, batch_shape):
        super().__init__(batch_shape=batch_shape)
        self.x_kernel, self.task_kernel = x_kernel, task_kernel

    def forward(self, x1, x2, diag=False, **params):
        k = to_dense(self.x_kernel.forward(x1[..., :-2], x2[..., :-2], diag=diag))
        m1, m2 = x1[..., -1], x2[..., -1]
        if self.task_kernel is not None:
            b = self.task_kernel.covar_matrix.to_dense()  # [*batch, T, T]
            t1, t2 = x1[..., -2].long(), x2[..., -2].long()  # [*batch, n], [*batch, n']
            if diag:
                k = k * b.diagonal(dim1=-2, dim2=-1).gather(-1, t1)
            else:
                rows = b.gather(-2, t1[..., None].expand(*t1.shape, b.shape[-1]))  # [*, n, T]
                k = k * rows.gather(-1, t2[..., None, :].expand(*t1.shape, t2.shape[-1]))
        return k * (m1 * m2 if diag else m1[..., :, None] * m2[..., None, :])


class _MaskedNoise(MultitaskHomoskedasticNoise):
    """Noise variance ``sigma^2[t]`` on an observed row, 1 on a masked one."""

    def forward(self, *params, shape=None, **kwargs):
        if not params:  # GPyTorch passes the rows wherever this module is used here
            raise ValueError("the masked noise model needs the GP rows")
        rows = params[0] if torch.is_tensor(params[0]) else params[0][0]
        task, m = rows[..., -2].long(), rows[..., -1]
        return DiagLinearOperator(m * self.noise.gather(-1, task) + (1 - m))


class _BatchGP(gpytorch.models.ExactGP):
    """Zero-mean exact GP over rows ``[batch, n, dim_x + 2]`` (x, task index, observed flag)."""

    def __init__(self, rows, y, n_tasks: int):
        batch = rows.shape[:1]
        likelihood = GaussianLikelihood(batch_shape=batch)
        likelihood.noise_covar = _MaskedNoise(n_tasks, batch_shape=batch)
        super().__init__(rows, y, likelihood)
        dim_x = rows.shape[-1] - 2
        if n_tasks == 1:  # sigma_f^2 SE-ARD
            ard = RBFKernel(ard_num_dims=dim_x, batch_shape=batch)
            self.covar_module = _MaskedKernel(ScaleKernel(ard, batch_shape=batch), None, batch)
        else:  # SE-ARD(x) x B, B = W W^T + diag(v) a full T x T inter-task covariance
            with torch.random.fork_rng(devices=[]):  # IndexKernel draws W from the global RNG
                tasks = IndexKernel(n_tasks, rank=n_tasks, batch_shape=batch)
            # Deterministic start: B = ln(2) I, the prior of `gp` at its (GPyTorch default) init.
            ln2 = torch.log(torch.tensor(2.0))
            tasks.covar_factor.data.copy_(torch.eye(n_tasks) * (ln2 / 2).sqrt())
            tasks.initialize(raw_var=tasks.raw_var_constraint.inverse_transform(ln2 / 2))
            ard = RBFKernel(ard_num_dims=dim_x, batch_shape=batch)
            self.covar_module = _MaskedKernel(ard, tasks, batch)
        self.to(rows)

    def forward(self, rows):
        mean = rows.new_zeros(rows.shape[:-1])
        return gpytorch.distributions.MultivariateNormal(mean, self.covar_module(rows))

    def fit(self, n_iterations: int, lr: float) -> None:
        """Adam on the log marginal likelihood per observed row of each task (so padding does
        not rescale a task's gradient); tasks share nothing, so each is its own fit."""
        rows, y = self.train_inputs[0], self.train_targets
        n_obs = rows[..., -1].sum(-1)
        self.train()
        if n_iterations > 0 and n_obs.sum() > 0:  # otherwise every gradient is zero
            mll = ExactMarginalLogLikelihood(self.likelihood, self)
            opt = torch.optim.Adam(self.parameters(), lr=lr)
            weight = rows.shape[-2] / n_obs.clamp_min(1)  # mll is log p / n_rows
            # Dense kernels while fitting: every entry is needed and it skips lazy bookkeeping.
            with gpytorch.settings.lazily_evaluate_kernels(False):
                for _ in range(n_iterations):
                    opt.zero_grad()
                    loss = -(mll(self(rows), y, rows) * weight).sum()
                    loss.backward()
                    opt.step()
        self.eval()

    def condition_differentiably(self, rows: torch.Tensor, y: torch.Tensor) -> None:
        """Condition the fitted GP on context rows and outputs that carry gradients (the same
        values it was fit on), with its hyper-parameters frozen: the posterior is then
        differentiable in the context and targets at the fitted hyper-parameters."""
        self.requires_grad_(False)
        self.set_train_data(rows, y, strict=False)

    def predict(
        self, rows, noise: bool, max_elements: int = 2**25
    ) -> tuple[torch.Tensor, torch.Tensor]:
        """Marginal mean and variance ``[batch, n]`` at rows ``[batch, n, dim_x + 2]``, with the
        fitted observation noise if ``noise``; targets are streamed in chunks. Differentiable
        in ``rows`` and the training rows and outputs where gradients are on and one of them
        requires grad; otherwise computed without a graph. ``max_elements`` bounds ``batch *
        chunk * context rows`` per chunk."""
        train = (*self.train_inputs, self.train_targets, rows)
        grad = torch.is_grad_enabled() and any(t.requires_grad for t in train)
        n_train = self.train_inputs[0].shape[-2]
        chunk = max(1, max_elements // max(rows.shape[0] * n_train, 1))
        means, variances = [], []
        # GPyTorch detaches its cached solve against the context by default: keep it attached
        # where gradients must reach the context.
        with torch.set_grad_enabled(grad), gpytorch.settings.detach_test_caches(not grad):
            for part in rows.split(chunk, dim=-2):
                dist = self(part)
                if noise:
                    dist = self.likelihood(dist, part)
                means.append(dist.mean)
                variances.append(dist.variance)
        return torch.cat(means, -1), torch.cat(variances, -1)


def _exact_settings():
    """Cholesky everywhere (no CG/Lanczos with random probes): exact and deterministic."""
    return gpytorch.settings.fast_computations(False, False, False)
