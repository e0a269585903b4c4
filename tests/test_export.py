"""``minigrad.export``: models to PyTorch and back, the same layers, weights, buffers, modes and outputs.

Tests marked by the ``torch`` fixture skip where PyTorch is not installed (it
is an optional extra); the first group runs without it: the import, the
ImportError's advice, and the refusals that need no PyTorch.

Measured (float32, 16 random MNIST-sized images): the chapter-06 CNN's logits
differ by at most about 2e-7 between the libraries, its gradients by 5e-8,
its parameters after one SGD step by 2e-8; with BatchNorm in training mode
1.2e-6, 6e-7 and 6e-8. In float64 the differences are about 1e-15.
"""

from __future__ import annotations

import subprocess
import sys
from collections import OrderedDict

import numpy as np
import pytest

import minigrad.nn as nn
import minigrad.nn.functional as F
import minigrad.optim as optim
import minigrad.tensor as mt
from minigrad.export import (UnsupportedLayerError, from_torch, state_dict_from_torch, state_dict_to_torch,
                             supported_names, to_torch)
from minigrad.export.layer_table import CONTAINERS, LAYERS, constructor_arguments
from minigrad.training.recipes import mnist_cnn, mnist_mlp

FLOAT32 = dict(rtol=1e-6, atol=1e-6)  # outputs of the two libraries in float32
FLOAT32_GRAD = dict(rtol=1e-5, atol=1e-6)  # gradients add a backward pass of rounding
FLOAT64 = dict(rtol=1e-12, atol=1e-12)


@pytest.fixture
def torch():
    return pytest.importorskip("torch")


@pytest.fixture
def without_torch(monkeypatch):
    """``import torch`` fails as it does where PyTorch is not installed."""
    monkeypatch.setitem(sys.modules, "torch", None)


class Net(nn.Module):
    """A model of one's own class: its forward is Python code, which no converter translates."""

    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(6, 5)
        self.fc2 = nn.Linear(5, 3)

    def forward(self, x):
        return self.fc2(F.relu(self.fc1(x))) * 2


def bn_cnn() -> nn.Module:
    """The chapter-06 CNN with BatchNorm (2d and 1d), a bias-free conv, a strided conv and dropout."""
    return nn.Sequential(
        nn.Conv2d(1, 8, 3, padding=1, bias=False), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(8, 8, 3, stride=2, padding=1), nn.ReLU(), nn.Flatten(),
        nn.Linear(8 * 7 * 7, 32), nn.BatchNorm1d(32), nn.Dropout(0.25), nn.Linear(32, 10),
    )


def images(n: int = 16, dtype="float32", seed: int = 0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, 1, 28, 28)).astype(dtype), rng.integers(0, 10, n)


def arrays(tensors):
    return [np.asarray(t.detach().numpy()) for t in tensors]


def run_both(model, torch_model, x, torch):
    return model(mt.Tensor(x)).detach().numpy(), torch_model(torch.from_numpy(x)).detach().numpy()


# ---------------------------------------------------------------- without PyTorch


def test_the_package_imports_without_torch_and_the_conversions_say_how_to_install_it():
    code = (
        "import sys; sys.modules['torch'] = None\n"
        "import minigrad.export as ex\n"
        "from minigrad.training.recipes import mnist_mlp\n"
        "try:\n"
        "    ex.to_torch(mnist_mlp())\n"
        "except ImportError as err:\n"
        "    print(err)\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stderr
    assert "to_torch needs PyTorch" in result.stdout and "pip install torch" in result.stdout


@pytest.mark.parametrize("call", [
    lambda: to_torch(mnist_mlp()),
    lambda: from_torch(object()),
    lambda: state_dict_to_torch(mnist_mlp().state_dict()),
    lambda: state_dict_from_torch({}),
], ids=["to_torch", "from_torch", "state_dict_to_torch", "state_dict_from_torch"])
def test_without_torch_every_conversion_raises_an_import_error_naming_pip_install_torch(without_torch, call):
    with pytest.raises(ImportError, match=r"needs PyTorch.*pip install torch"):
        call()


def test_an_unsupported_layer_is_refused_with_its_path_and_class_before_torch_is_needed(without_torch):
    model = nn.Sequential(OrderedDict(
        features=nn.Sequential(nn.Linear(6, 6), nn.ReLU(), nn.Linear(6, 6), Net()),
        head=nn.Linear(3, 2),
    ))
    with pytest.raises(UnsupportedLayerError) as info:
        to_torch(model)
    message = str(info.value)
    assert "to_torch: 1 module(s) have no PyTorch counterpart: features.3 (Net)" in message
    assert "Supported: Linear, Conv2d" in message and "state_dict_to_torch" in message


def test_a_model_of_ones_own_class_is_refused_as_the_model_itself(without_torch):
    with pytest.raises(UnsupportedLayerError, match=r"the model itself \(Net\)"):
        to_torch(Net())


def test_a_subclass_of_a_supported_layer_is_refused(without_torch):
    class ScaledLinear(nn.Linear):
        def forward(self, x):
            return super().forward(x) * 3

    with pytest.raises(UnsupportedLayerError, match=r"1 \(ScaledLinear\)"):
        to_torch(nn.Sequential(nn.ReLU(), ScaledLinear(2, 2)))


def test_a_module_with_hooks_is_refused_since_they_would_be_lost(without_torch):
    model = mnist_mlp()
    handle = model[2].register_forward_hook(lambda module, args, output: output * 0)
    with pytest.raises(UnsupportedLayerError, match=r"hooks, which do not convert: 2 \(nn.ReLU\); remove them"):
        to_torch(model)
    handle.remove()
    with pytest.raises(ImportError):  # past the checks: only PyTorch is missing now
        to_torch(model)


@pytest.mark.parametrize("not_a_model", [42, "model", None, mt.ones(2), [nn.Linear(2, 2)]])
def test_to_torch_refuses_what_is_not_a_minigrad_module(not_a_model):
    with pytest.raises(TypeError, match="to_torch: expected a minigrad.nn.Module"):
        to_torch(not_a_model)


def test_a_model_off_the_cpu_is_refused_with_the_tensor_and_the_fix(without_torch):
    from minigrad.testing import strict_backend

    device = strict_backend.register()
    model = mnist_mlp().to(device)
    with pytest.raises(ValueError, match=r"parameter '1.weight' is on device strict.*model\.cpu\(\)"):
        to_torch(model)


# ---------------------------------------------------------------- the course's models, both ways


@pytest.mark.parametrize("build", [mnist_mlp, mnist_cnn, bn_cnn])
@pytest.mark.parametrize("mode", ["train", "eval"])
def test_the_recipes_models_give_equal_outputs_in_pytorch_and_come_back_exactly(torch, build, mode):
    mt.manual_seed(0)
    model = build()
    x, _ = images()
    for layer in model.modules():
        if isinstance(layer, nn.Dropout):
            layer.p = 0.0  # dropout's masks come from different generators; its p is checked elsewhere
    model(mt.Tensor(x))  # BatchNorm: running statistics away from their initial values
    model.train(mode == "train")
    torch_model = to_torch(model)
    assert list(torch_model.state_dict()) == list(model.state_dict())
    back = from_torch(torch_model)
    assert repr(back) == repr(model)
    for key, value in model.state_dict().items():  # through PyTorch and back, bit for bit
        np.testing.assert_array_equal(back.state_dict()[key].numpy(), value.numpy())

    ours, theirs = run_both(model, torch_model, x, torch)  # in training mode, BatchNorm updates its statistics
    np.testing.assert_allclose(theirs, ours, **FLOAT32)
    for ours_buffer, theirs_buffer in zip(arrays(model.buffers()), arrays(torch_model.buffers())):
        np.testing.assert_allclose(theirs_buffer, ours_buffer, **FLOAT32)  # the same running-stat updates
    np.testing.assert_array_equal(back(mt.Tensor(x)).detach().numpy(), ours)  # the same library: the same bits


@pytest.mark.parametrize("build", [mnist_mlp, mnist_cnn, bn_cnn])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_one_sgd_step_gives_equal_gradients_and_parameters(torch, build, dtype):
    mt.manual_seed(1)
    model = build().to(getattr(mt, dtype))
    torch_model = to_torch(model)
    for module in (model, torch_model):
        for layer in module.modules():
            if type(layer).__name__ == "Dropout":
                layer.p = 0.0
    x, y = images(dtype=dtype, seed=1)
    ours = optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    theirs = torch.optim.SGD(torch_model.parameters(), lr=0.1, momentum=0.9)
    F.cross_entropy(model(mt.Tensor(x)), mt.Tensor(y)).backward()
    torch.nn.functional.cross_entropy(torch_model(torch.from_numpy(x)), torch.from_numpy(y)).backward()
    grad_tolerance = FLOAT32_GRAD if dtype == "float32" else FLOAT64
    for (name, p), q in zip(model.named_parameters(), torch_model.parameters()):
        np.testing.assert_allclose(q.grad.numpy(), p.grad.numpy(), **grad_tolerance, err_msg=name)
    ours.step()
    theirs.step()
    for (name, p), q in zip(model.named_parameters(), torch_model.parameters()):
        np.testing.assert_allclose(q.detach().numpy(), p.detach().numpy(), **grad_tolerance, err_msg=name)


@pytest.mark.parametrize("build", [mnist_mlp, mnist_cnn, bn_cnn])
def test_one_adam_step_from_pytorch_gives_equal_parameters(torch, build):
    """In float64: Adam's first step is lr * g / (|g| + eps), about lr * sign(g), so in float32 the rounding
    noise on a gradient that is zero in exact arithmetic (a Linear's bias right before BatchNorm) becomes
    a step of +-lr, different in the two libraries; float64's noise stays below eps."""
    torch.manual_seed(2)
    torch_model = to_torch(build()).double()  # start on the PyTorch side this time
    model = from_torch(torch_model)
    for module in (model, torch_model):
        for layer in module.modules():
            if type(layer).__name__ == "Dropout":
                layer.p = 0.0
    x, y = images(dtype="float64", seed=2)
    ours = optim.Adam(model.parameters(), lr=1e-3)
    theirs = torch.optim.Adam(torch_model.parameters(), lr=1e-3)
    F.cross_entropy(model(mt.Tensor(x)), mt.Tensor(y)).backward()
    torch.nn.functional.cross_entropy(torch_model(torch.from_numpy(x)), torch.from_numpy(y)).backward()
    for (name, p), q in zip(model.named_parameters(), torch_model.parameters()):
        np.testing.assert_allclose(p.grad.numpy(), q.grad.numpy(), **FLOAT64, err_msg=name)
    ours.step()
    theirs.step()
    for (name, p), q in zip(model.named_parameters(), torch_model.parameters()):
        np.testing.assert_allclose(p.detach().numpy(), q.detach().numpy(), rtol=0, atol=1e-9, err_msg=name)


# ---------------------------------------------------------------- every layer, every setting


def example_layers():
    """One instance of each row of the layer table, with settings away from the defaults."""
    return {
        "Linear": nn.Linear(4, 3, bias=False),
        "Conv2d": nn.Conv2d(2, 4, kernel_size=(3, 2), stride=(2, 1), padding=(1, 2), dilation=(2, 1), bias=False),
        "MaxPool2d": nn.MaxPool2d(3, stride=2, padding=1),
        "AvgPool2d": nn.AvgPool2d(3, stride=1, padding=1, count_include_pad=False),
        "BatchNorm1d": nn.BatchNorm1d(4, eps=1e-3, momentum=None),
        "BatchNorm2d": nn.BatchNorm2d(2, momentum=0.3, affine=False),
        "Dropout": nn.Dropout(0.3),
        "Flatten": nn.Flatten(0, 1),
        "Identity": nn.Identity(),
        "ReLU": nn.ReLU(),
        "LeakyReLU": nn.LeakyReLU(0.2),
        "GELU": nn.GELU(approximate="tanh"),
        "Sigmoid": nn.Sigmoid(),
        "Tanh": nn.Tanh(),
        "Softmax": nn.Softmax(dim=1),
        "LogSoftmax": nn.LogSoftmax(dim=0),
    }


def test_the_examples_cover_the_whole_table():
    assert sorted(example_layers()) == sorted(pair.name for pair in LAYERS)
    assert supported_names().split(", ") == [pair.name for pair in LAYERS + CONTAINERS]


@pytest.mark.parametrize("pair", LAYERS, ids=lambda pair: pair.name)
def test_each_layer_keeps_its_settings_its_state_dict_keys_and_its_outputs(torch, pair):
    layer = example_layers()[pair.name]
    theirs = to_torch(layer)
    assert type(theirs) is pair.torch_class(torch)
    assert constructor_arguments(theirs, pair) == constructor_arguments(layer, pair)
    assert list(theirs.state_dict()) == list(layer.state_dict())  # the same keys: no mapping needed
    back = from_torch(theirs)
    assert type(back) is pair.minigrad_class and constructor_arguments(back, pair) == constructor_arguments(layer, pair)

    shape = {"Linear": (5, 4), "BatchNorm1d": (6, 4), "Flatten": (2, 3, 4)}.get(pair.name, (2, 2, 7, 6))
    x = np.random.default_rng(3).standard_normal(shape).astype("float32")
    layer.eval(), theirs.eval()  # dropout: the identity, comparable
    ours, theirs_out = run_both(layer, theirs, x, torch)
    np.testing.assert_allclose(theirs_out, ours, **FLOAT32)


def test_batchnorm_running_stats_and_num_batches_tracked_cross_in_both_modes(torch):
    model = nn.Sequential(nn.BatchNorm1d(3, momentum=None))
    for seed in range(3):
        model(mt.Tensor(np.random.default_rng(seed).standard_normal((8, 3)).astype("float32")))
    torch_model = to_torch(model)
    bn = torch_model[0]
    assert bn.num_batches_tracked.item() == 3 and bn.num_batches_tracked.dtype == torch.int64
    np.testing.assert_array_equal(bn.running_var.numpy(), model[0].running_var.numpy())
    x = np.random.default_rng(9).standard_normal((8, 3)).astype("float32")
    ours, theirs = run_both(model, torch_model, x, torch)  # training: the cumulative average uses the count
    np.testing.assert_allclose(theirs, ours, **FLOAT32)
    np.testing.assert_allclose(bn.running_mean.numpy(), model[0].running_mean.numpy(), **FLOAT32)
    assert bn.num_batches_tracked.item() == int(model[0].num_batches_tracked.item()) == 4


def test_dropout_p_and_the_training_flag_of_each_module_cross(torch):
    model = nn.Sequential(nn.Linear(4, 4), nn.Dropout(0.3), nn.Sequential(nn.BatchNorm1d(4), nn.Dropout(0.7)))
    model[2].eval()  # one branch in evaluation mode, the rest training
    torch_model = to_torch(model)
    assert torch_model[1].p == 0.3 and torch_model[2][1].p == 0.7
    assert [m.training for m in torch_model.modules()] == [m.training for m in model.modules()] == \
        [True, True, True, False, False, False]
    assert [m.training for m in from_torch(torch_model).modules()] == [m.training for m in model.modules()]


def test_dtypes_and_requires_grad_flags_cross_both_ways(torch):
    model = mnist_cnn().double()
    model[0].requires_grad_(False)  # a frozen first layer
    torch_model = to_torch(model)
    assert {p.dtype for p in torch_model.parameters()} == {torch.float64}
    assert [p.requires_grad for p in torch_model.parameters()] == [p.requires_grad for p in model.parameters()] == \
        [False, False] + [True] * 4
    back = from_torch(torch_model)
    assert [(p.dtype, p.requires_grad) for p in back.parameters()] == [(p.dtype, p.requires_grad) for p in model.parameters()]
    x, _ = images(4, "float64")
    ours, theirs = run_both(model, torch_model, x, torch)
    np.testing.assert_allclose(theirs, ours, **FLOAT64)


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
def test_half_precision_weights_cross_bit_for_bit(torch, dtype):
    model = nn.Sequential(nn.Linear(5, 3)).to(getattr(mt, dtype))
    torch_model = to_torch(model)
    assert torch_model[0].weight.dtype == getattr(torch, dtype)
    back = from_torch(torch_model)
    assert back[0].weight.dtype == model[0].weight.dtype
    ours = model[0].weight.detach().numpy().view(np.int16)
    np.testing.assert_array_equal(back[0].weight.detach().numpy().view(np.int16), ours)
    np.testing.assert_array_equal(torch_model[0].weight.detach().view(torch.int16).numpy(), ours)


def test_nested_sequentials_with_names_and_module_containers_keep_their_tree(torch):
    model = nn.Sequential(OrderedDict(
        features=nn.Sequential(nn.Conv2d(1, 4, 3), nn.ReLU(), nn.Sequential(nn.MaxPool2d(2), nn.Flatten())),
        head=nn.Linear(4 * 13 * 13, 10),
    ))
    torch_model = to_torch(model)
    assert isinstance(torch_model.features[2], torch.nn.Sequential)
    assert list(torch_model.state_dict()) == list(model.state_dict()) == \
        ["features.0.weight", "features.0.bias", "head.weight", "head.bias"]
    x, _ = images(3)
    np.testing.assert_allclose(*run_both(model, torch_model, x, torch)[::-1], **FLOAT32)

    blocks = nn.ModuleDict({"encoder": nn.ModuleList([nn.Linear(3, 3), nn.Tanh()]), "decoder": nn.Linear(3, 2)})
    torch_blocks = to_torch(blocks)
    assert type(torch_blocks) is torch.nn.ModuleDict and type(torch_blocks["encoder"]) is torch.nn.ModuleList
    assert list(torch_blocks.state_dict()) == list(blocks.state_dict())
    assert type(from_torch(torch_blocks)["encoder"]) is nn.ModuleList


def test_a_shared_layer_and_tied_weights_stay_shared(torch):
    shared = nn.Linear(4, 4)
    tied = nn.Linear(4, 4)
    tied.weight = shared.weight
    torch_model = to_torch(nn.Sequential(shared, nn.ReLU(), shared, tied))
    assert torch_model[0] is torch_model[2]
    assert torch_model[3].weight is torch_model[0].weight
    back = from_torch(torch_model)
    assert back[0] is back[2] and back[3].weight is back[0].weight


def test_the_copy_shares_no_memory_with_the_original(torch):
    model = mnist_mlp()
    torch_model = to_torch(model)
    with torch.no_grad():
        torch_model[1].weight.zero_()
    assert float(np.abs(model[1].weight.detach().numpy()).sum()) > 0
    back = from_torch(torch_model)
    with mt.no_grad():
        back[1].bias.fill_(7.0)
    assert not (torch_model[1].bias == 7).any()


# ---------------------------------------------------------------- refusals from the PyTorch side


def test_from_torch_names_an_unsupported_layer_by_its_path_and_lists_what_converts(torch):
    module = torch.nn.Sequential(OrderedDict(
        features=torch.nn.Sequential(torch.nn.Linear(6, 6), torch.nn.ReLU(), torch.nn.Linear(6, 6), torch.nn.LSTM(6, 6)),
        head=torch.nn.Linear(6, 2),
    ))
    with pytest.raises(UnsupportedLayerError) as info:
        from_torch(module)
    message = str(info.value)
    assert "from_torch: 1 module(s) have no minigrad counterpart: features.3 (nn.LSTM)" in message
    assert "Supported: Linear, Conv2d" in message and "state_dict_from_torch" in message


def test_from_torch_refuses_a_module_of_ones_own_class_and_a_setting_minigrad_lacks(torch):
    class TorchNet(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc = torch.nn.Linear(2, 2)

        def forward(self, x):
            return self.fc(x) * 2

    with pytest.raises(UnsupportedLayerError, match=r"the model itself \(TorchNet\)"):
        from_torch(TorchNet())
    with pytest.raises(UnsupportedLayerError, match=r"1 \(nn.Conv2d\) cannot be built in minigrad: .*groups=2"):
        from_torch(torch.nn.Sequential(torch.nn.ReLU(), torch.nn.Conv2d(4, 4, 3, groups=2)))
    with pytest.raises(UnsupportedLayerError, match=r"the model itself \(nn.MaxPool2d\) cannot be built .*ceil_mode"):
        from_torch(torch.nn.MaxPool2d(2, ceil_mode=True))


def test_a_torch_module_with_hooks_is_refused(torch):
    module = torch.nn.Sequential(torch.nn.Linear(2, 2))
    handle = module[0].register_forward_pre_hook(lambda m, args: None)
    with pytest.raises(UnsupportedLayerError, match=r"from_torch: 1 module\(s\) have forward or backward hooks.*0 \(nn.Linear\)"):
        from_torch(module)
    handle.remove()
    assert type(from_torch(module)[0]) is nn.Linear


def test_a_layer_with_an_extra_parameter_is_refused(torch):
    layer = nn.Linear(2, 2)
    layer.scale = nn.Parameter(mt.ones(1))  # its forward ignores it; a silent copy would mislead
    with pytest.raises(UnsupportedLayerError, match=r"holds the parameters \['weight', 'bias', 'scale'\]"):
        to_torch(layer)


@pytest.mark.parametrize("not_a_module", [42, None, np.zeros(2), "lin"])
def test_from_torch_refuses_what_is_not_a_torch_module(torch, not_a_module):
    with pytest.raises(TypeError, match="from_torch: expected a torch.nn.Module"):
        from_torch(not_a_module)


def test_each_direction_points_to_the_other_when_given_the_wrong_library(torch):
    with pytest.raises(TypeError, match="from_torch goes the other way"):
        to_torch(torch.nn.Linear(2, 2))
    with pytest.raises(TypeError, match="to_torch goes the other way"):
        from_torch(nn.Linear(2, 2))


def test_a_torch_module_off_the_cpu_is_refused(torch):
    with pytest.raises(ValueError, match=r"from_torch: parameter '0.weight' is on device meta.*module\.cpu\(\)"):
        from_torch(torch.nn.Sequential(torch.nn.Linear(2, 2, device="meta")))


def test_an_unsupported_dtype_is_refused(torch):
    with pytest.raises(TypeError, match=r"'weight' has dtype complex64, which does not convert"):
        from_torch(torch.nn.Linear(2, 2, dtype=torch.complex64))


# ---------------------------------------------------------------- a model of one's own class: the state dict


def test_a_custom_model_moves_through_its_state_dict(torch):
    class TorchNet(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.fc1 = torch.nn.Linear(6, 5)
            self.fc2 = torch.nn.Linear(5, 3)

        def forward(self, x):
            return self.fc2(torch.relu(self.fc1(x))) * 2

    model, torch_model = Net(), TorchNet()
    torch_model.load_state_dict(state_dict_to_torch(model.state_dict()))
    x = np.random.default_rng(4).standard_normal((7, 6)).astype("float32")
    np.testing.assert_allclose(*run_both(model, torch_model, x, torch)[::-1], **FLOAT32)
    again = Net()
    again.load_state_dict(state_dict_from_torch(torch_model.state_dict()))
    np.testing.assert_array_equal(again.fc1.weight.detach().numpy(), model.fc1.weight.detach().numpy())


def test_the_state_dict_converters_refuse_the_wrong_input(torch):
    with pytest.raises(TypeError, match="state_dict_to_torch: expected a dict of tensors"):
        state_dict_to_torch(mnist_mlp())
    with pytest.raises(TypeError, match=r"entry 'w' is a Tensor, not a minigrad Tensor"):
        state_dict_to_torch({"w": torch.ones(2)})
    with pytest.raises(TypeError, match=r"entry 'w' is a Tensor, not a torch.Tensor"):
        state_dict_from_torch({"w": mt.ones(2)})
