"""Module machinery: registration, tree walking, modes, state_dict, devices/dtypes, repr, containers."""

import copy
import pickle
from collections import OrderedDict

import numpy as np
import pytest

import minigrad.nn as nn
import minigrad.nn.functional as F
import minigrad.tensor as mt


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(1, 4, 3), nn.BatchNorm2d(4), nn.ReLU(), nn.MaxPool2d(2), nn.Dropout(0.25))
        self.head = nn.Linear(4 * 3 * 3, 10, bias=False)
        self.scale = nn.Parameter(mt.ones(1))
        self.register_buffer("steps", mt.zeros(1))
        self.register_buffer("scratch", mt.zeros(2), persistent=False)

    def forward(self, x):
        return self.head(self.features(x).flatten(1)) * self.scale


EXPECTED_KEYS = [
    "scale", "steps",
    "features.0.weight", "features.0.bias",
    "features.1.weight", "features.1.bias", "features.1.running_mean", "features.1.running_var",
    "features.1.num_batches_tracked",
    "head.weight",
]


def test_parameters_are_registered_in_order():
    net = Net()
    names = [n for n, _ in net.named_parameters()]
    assert names == ["scale", "features.0.weight", "features.0.bias", "features.1.weight", "features.1.bias", "head.weight"]
    assert all(isinstance(p, nn.Parameter) and p.requires_grad for p in net.parameters())
    assert [n for n, _ in net.named_buffers()] == [
        "steps", "scratch", "features.1.running_mean", "features.1.running_var", "features.1.num_batches_tracked"
    ]
    assert [n for n, _ in net.named_children()] == ["features", "head"]
    assert [n for n, _ in net.named_modules()] == ["", "features", "features.0", "features.1", "features.2", "features.3", "features.4", "head"]
    assert len(list(net.parameters(recurse=False))) == 1
    assert net.get_submodule("features.1") is net.features[1]


def test_shared_parameters_are_listed_once():
    a = nn.Linear(3, 3)
    seq = nn.Sequential(a, nn.ReLU(), a)
    assert len(list(seq.parameters())) == 2
    assert [n for n, _ in seq.named_modules()] == ["", "0", "1"]


def test_assigning_a_plain_tensor_to_a_parameter_name_is_refused():
    layer = nn.Linear(2, 2)
    with pytest.raises(TypeError, match="Parameter or None expected"):
        layer.weight = mt.zeros(2, 2)
    layer.bias = None
    assert layer.bias is None and [n for n, _ in layer.named_parameters()] == ["weight"]


def test_a_name_lives_in_one_store_and_reassignment_replaces_it():
    m = nn.Module()
    m.scale = 1.0
    m.scale = nn.Parameter(mt.ones(2))  # a plain attribute becomes a parameter: the old value must not shadow it
    assert isinstance(m.scale, nn.Parameter) and "scale" not in m.__dict__
    m.block = nn.Parameter(mt.ones(1))
    m.block = nn.Linear(2, 2)  # a parameter becomes a child: it leaves _parameters
    assert "block" not in m._parameters and m.block is m._modules["block"]
    m.gain = nn.Parameter(mt.ones(1))
    m.gain = None  # a None placeholder stays registered, and is skipped by the walk and the state_dict
    assert m._parameters["gain"] is None and m.gain is None
    assert [n for n, _ in m.named_parameters()] == ["scale", "block.weight", "block.bias"]
    assert list(m.state_dict()) == ["scale", "block.weight", "block.bias"]
    m.scale = nn.Parameter(mt.zeros(2))  # the same kind again: the entry moves to the end of its store
    assert list(m._parameters) == ["gain", "scale"]


def test_named_members_walk_children_in_order_with_prefix_and_without_recursion():
    outer = nn.Module()
    outer.a = nn.Sequential(nn.Linear(2, 2), nn.ReLU())
    outer.w = nn.Parameter(mt.ones(1))
    assert [n for n, _ in outer.named_parameters(prefix="net")] == ["net.w", "net.a.0.weight", "net.a.0.bias"]
    assert [n for n, _ in outer.named_parameters(recurse=False)] == ["w"]
    assert [n for n, _ in outer.named_modules(prefix="net")] == ["net", "net.a", "net.a.0", "net.a.1"]
    state = outer.state_dict(keep_vars=True)
    assert state["w"] is outer.w and not outer.state_dict()["w"].requires_grad


def test_containers_live_in_their_own_module():
    from minigrad.nn import containers

    assert nn.ModuleList is containers.ModuleList and nn.ModuleDict is containers.ModuleDict


def test_forgetting_super_init_gives_a_clear_error():
    class Bad(nn.Module):
        def __init__(self):
            self.fc = nn.Linear(2, 2)

    with pytest.raises(AttributeError, match=r"super\(\).__init__\(\)"):
        Bad()


def test_missing_forward_and_unknown_attribute():
    with pytest.raises(NotImplementedError, match="has no forward"):
        nn.Module()(1)
    with pytest.raises(AttributeError, match="'Linear' object has no attribute 'wieght'"):
        nn.Linear(2, 2).wieght


def test_delattr_removes_a_registered_name():
    net = Net()
    del net.head
    assert "head" not in dict(net.named_children())


def test_train_eval_propagates():
    net = Net()
    assert net.training and net.features[4].training
    assert net.eval() is net
    assert not any(m.training for m in net.modules())
    net.train()
    assert all(m.training for m in net.modules())
    net.features.train(False)
    assert net.training and not net.features[1].training


def test_zero_grad():
    net = Net()
    net(mt.randn(2, 1, 8, 8)).sum().backward()
    assert all(p.grad is not None for p in net.parameters())
    net.zero_grad(set_to_none=False)
    assert all(p.grad is not None and not p.grad.cpu().numpy().any() for p in net.parameters())
    net.zero_grad()
    assert all(p.grad is None for p in net.parameters())


def test_requires_grad_freezes():
    net = Net()
    net.features.requires_grad_(False)
    assert [n for n, p in net.named_parameters() if p.requires_grad] == ["scale", "head.weight"]


def test_apply_visits_children_first():
    seen = []
    Net().apply(lambda m: seen.append(type(m).__name__))
    assert seen == ["Conv2d", "BatchNorm2d", "ReLU", "MaxPool2d", "Dropout", "Sequential", "Linear", "Net"]


def test_apply_for_custom_init():
    net = Net()

    def init(m):
        if isinstance(m, nn.Linear):
            nn.init.zeros_(m.weight)

    net.apply(init)
    assert not net.head.weight.detach().cpu().numpy().any()


# ----------------------------------------------------------------------------- state dict


def test_state_dict_keys_and_sharing():
    net = Net()
    sd = net.state_dict()
    assert list(sd) == EXPECTED_KEYS  # "scratch" is not persistent
    assert not sd["head.weight"].requires_grad
    assert mt.shares_memory(sd["head.weight"], net.head.weight)
    assert net.state_dict(keep_vars=True)["head.weight"] is net.head.weight


def test_state_dict_round_trip_through_save_and_load(tmp_path):
    mt.manual_seed(1)
    a = Net()
    a(mt.randn(4, 1, 8, 8))  # moves BatchNorm's running stats away from their initial values
    mt.manual_seed(2)
    b = Net()
    path = nn.save(a.state_dict(), tmp_path / "net.ckpt")
    loaded = nn.load(path)
    assert loaded["features.1.num_batches_tracked"].shape == ()  # 0-d tensors stay 0-d
    result = b.load_state_dict(loaded)
    assert result.missing_keys == [] and result.unexpected_keys == []
    for (ka, va), (kb, vb) in zip(a.state_dict().items(), b.state_dict().items()):
        assert ka == kb and va.dtype == vb.dtype
        np.testing.assert_array_equal(va.cpu().numpy(), vb.cpu().numpy())
    a.eval(), b.eval()
    x = mt.randn(2, 1, 8, 8)
    np.testing.assert_array_equal(a(x).detach().cpu().numpy(), b(x).detach().cpu().numpy())


def test_state_dict_round_trip_in_memory():
    mt.manual_seed(1)
    a = Net()
    a(mt.randn(4, 1, 8, 8))
    b = Net()
    b.load_state_dict({k: v.clone() for k, v in a.state_dict().items()})
    for (ka, va), (kb, vb) in zip(a.state_dict().items(), b.state_dict().items()):
        assert ka == kb
        np.testing.assert_array_equal(va.cpu().numpy(), vb.cpu().numpy())


def test_load_state_dict_keeps_parameter_objects():
    a, b = Net(), Net()
    weight = b.head.weight
    b.load_state_dict(a.state_dict())
    assert b.head.weight is weight
    np.testing.assert_array_equal(weight.detach().cpu().numpy(), a.head.weight.detach().cpu().numpy())


def test_strict_load_lists_missing_and_unexpected_keys():
    net = Net()
    sd = net.state_dict()
    del sd["head.weight"], sd["features.0.bias"]
    sd["head.bias"] = mt.zeros(10)
    with pytest.raises(RuntimeError) as info:
        net.load_state_dict(sd)
    text = str(info.value)
    assert "Error(s) in loading state_dict for Net:" in text
    assert 'Missing key(s) in state_dict: "features.0.bias", "head.weight".' in text
    assert 'Unexpected key(s) in state_dict: "head.bias".' in text
    assert "strict=False" in text


def test_non_strict_load_returns_the_keys():
    net = Net()
    sd = net.state_dict()
    del sd["head.weight"]
    sd["extra"] = mt.zeros(1)
    result = net.load_state_dict(sd, strict=False)
    assert result == nn.IncompatibleKeys(["head.weight"], ["extra"])


def test_size_mismatch_names_the_key_and_both_shapes_even_when_not_strict():
    net = Net()
    sd = net.state_dict()
    sd["head.weight"] = mt.zeros(10, 7)
    for strict in (True, False):
        with pytest.raises(RuntimeError) as info:
            net.load_state_dict(sd, strict=strict)
        assert (
            "size mismatch for head.weight: copying a param with shape (10, 7) from checkpoint, "
            "the shape in current model is (10, 36)." in str(info.value)
        )


def test_wrapper_prefix_is_diagnosed():
    net = nn.Linear(2, 2)
    sd = {"module." + k: v for k, v in net.state_dict().items()}
    with pytest.raises(RuntimeError, match="strip it"):
        net.load_state_dict(sd)


def test_load_accepts_numpy_arrays_and_converts_dtype():
    layer = nn.Linear(2, 3)
    layer.load_state_dict({"weight": np.ones((3, 2)), "bias": np.arange(3)})
    assert layer.weight.dtype == mt.float32
    np.testing.assert_array_equal(layer.bias.detach().cpu().numpy(), [0, 1, 2])


# ----------------------------------------------------------------------------- dtypes and devices


def test_double_and_float_convert_in_place_keeping_identity():
    net = Net()
    params = list(net.parameters())
    net(mt.randn(2, 1, 8, 8)).sum().backward()
    assert net.double() is net
    assert [p for p in net.parameters()] == params and all(a is b for a, b in zip(net.parameters(), params))
    assert all(p.dtype == mt.float64 and p.grad.dtype == mt.float64 for p in net.parameters())
    assert net.features[1].running_mean.dtype == mt.float64
    assert net.features[1].num_batches_tracked.dtype == mt.int64  # integers are left alone
    out = net(mt.randn(2, 1, 8, 8, dtype=mt.float64))
    assert out.dtype == mt.float64
    net.float()
    assert all(p.dtype == mt.float32 for p in net.parameters())
    assert net.to(mt.float64).head.weight.dtype == mt.float64
    assert net.to("cpu") is net and net.head.weight.device == mt.cpu


def test_to_another_device(twin_device_module):
    dev = twin_device_module
    net = Net().to(dev)
    assert all(p.device == dev for p in net.parameters())
    assert all(b.device == dev for b in net.buffers())
    out = net(mt.randn(2, 1, 8, 8, device=dev))
    assert out.device == dev
    out.sum().backward()
    assert net.features[0].weight.grad.device == dev


@pytest.fixture
def twin_device_module():
    backend = mt.Backend(
        "twin", np, array_types=(), to_numpy=lambda a: np.array(a, copy=True),
        from_numpy=lambda a, index=None: np.array(a, copy=True), default_index=0,
    )
    mt.register_backend(backend)
    try:
        yield mt.device("twin")
    finally:
        mt.unregister_backend("twin")


def test_deepcopy_and_pickle_give_independent_models():
    net = Net()
    twin = copy.deepcopy(net)
    assert twin.head.weight is not net.head.weight
    np.testing.assert_array_equal(twin.head.weight.detach().cpu().numpy(), net.head.weight.detach().cpu().numpy())
    with mt.no_grad():
        twin.head.weight.mul_(0)
    assert net.head.weight.detach().cpu().numpy().any()
    twin.eval()(mt.randn(2, 1, 8, 8))  # buffers came along too, on the same device
    again = pickle.loads(pickle.dumps(net))
    assert isinstance(again.head.weight, nn.Parameter) and again.head.weight.requires_grad
    np.testing.assert_array_equal(again.features[0].weight.detach().cpu().numpy(), net.features[0].weight.detach().cpu().numpy())


# ----------------------------------------------------------------------------- repr


def test_repr_is_nested_like_pytorch():
    assert repr(Net()) == (
        "Net(\n"
        "  (features): Sequential(\n"
        "    (0): Conv2d(1, 4, kernel_size=(3, 3), stride=(1, 1))\n"
        "    (1): BatchNorm2d(4, eps=1e-05, momentum=0.1, affine=True, track_running_stats=True)\n"
        "    (2): ReLU()\n"
        "    (3): MaxPool2d(kernel_size=2, stride=2, padding=0, dilation=1, ceil_mode=False)\n"
        "    (4): Dropout(p=0.25, inplace=False)\n"
        "  )\n"
        "  (head): Linear(in_features=36, out_features=10, bias=False)\n"
        ")"
    )


def test_leaf_reprs_match_pytorch(torch):
    pairs = [
        (nn.Linear(3, 4), torch.nn.Linear(3, 4)),
        (nn.Conv2d(3, 4, 3, stride=2, padding=1, bias=False), torch.nn.Conv2d(3, 4, 3, stride=2, padding=1, bias=False)),
        (nn.Conv2d(3, 4, (3, 2), dilation=2, padding="same"), torch.nn.Conv2d(3, 4, (3, 2), dilation=2, padding="same")),
        (nn.AvgPool2d(2), torch.nn.AvgPool2d(2)),
        (nn.Flatten(), torch.nn.Flatten()),
        (nn.Identity(), torch.nn.Identity()),
        (nn.GELU(approximate="tanh"), torch.nn.GELU(approximate="tanh")),
        (nn.LeakyReLU(0.2), torch.nn.LeakyReLU(0.2)),
        (nn.ReLU(inplace=True), torch.nn.ReLU(inplace=True)),
        (nn.Softmax(dim=1), torch.nn.Softmax(dim=1)),
        (nn.CrossEntropyLoss(), torch.nn.CrossEntropyLoss()),
        (nn.ModuleList([nn.Tanh(), nn.Sigmoid()]), torch.nn.ModuleList([torch.nn.Tanh(), torch.nn.Sigmoid()])),
    ]
    for ours, theirs in pairs:
        assert repr(ours) == repr(theirs)


def test_parameter_repr_and_sharing():
    data = mt.tensor([1.0, 2.0])
    p = nn.Parameter(data)
    where = "" if data.device is mt.cpu else f", device='{data.device}'"
    assert repr(p) == f"Parameter containing:\ntensor([1., 2.]{where}, requires_grad=True)"
    assert mt.shares_memory(p, data) and p.is_leaf and p.requires_grad
    assert type(p * 2) is mt.Tensor
    assert not nn.Parameter(mt.zeros(1), requires_grad=False).requires_grad


# ----------------------------------------------------------------------------- containers


def test_sequential_indexing_len_iteration_and_slicing():
    seq = nn.Sequential(nn.Linear(4, 3), nn.ReLU(), nn.Linear(3, 2))
    assert len(seq) == 3
    assert isinstance(seq[0], nn.Linear) and isinstance(seq[-1], nn.Linear) and seq[1] is list(seq)[1]
    head = seq[:2]
    assert isinstance(head, nn.Sequential) and len(head) == 2 and head[0] is seq[0]
    x = mt.randn(5, 4)
    np.testing.assert_allclose(seq(x).detach().cpu().numpy(), seq[2](seq[1](seq[0](x))).detach().cpu().numpy())
    seq.append(nn.Tanh())
    assert len(seq) == 4 and [n for n, _ in seq.named_children()] == ["0", "1", "2", "3"]
    with pytest.raises(IndexError, match="out of range"):
        seq[7]


def test_sequential_from_ordered_dict():
    seq = nn.Sequential(OrderedDict([("fc", nn.Linear(2, 2)), ("act", nn.ReLU())]))
    assert list(seq.state_dict()) == ["fc.weight", "fc.bias"]
    assert seq.fc is seq[0]


def test_module_list_registers_its_modules():
    class Stack(nn.Module):
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList([nn.Linear(3, 3) for _ in range(3)])

        def forward(self, x):
            for layer in self.layers:
                x = layer(x)
            return x

    s = Stack()
    assert len(list(s.parameters())) == 6
    assert list(s.state_dict())[:2] == ["layers.0.weight", "layers.0.bias"]
    s.layers.append(nn.Linear(3, 1))
    s.layers.insert(0, nn.Identity())
    assert len(s.layers) == 5 and isinstance(s.layers[0], nn.Identity) and isinstance(s.layers[-1], nn.Linear)
    assert s(mt.randn(2, 3)).shape == (2, 1)


def test_module_dict():
    d = nn.ModuleDict({"a": nn.Linear(2, 2), "b": nn.ReLU()})
    assert list(d) == ["a", "b"] and "a" in d and len(d) == 2
    assert [n for n, _ in d.named_parameters()] == ["a.weight", "a.bias"]


def test_functional_and_module_agree():
    layer = nn.Linear(4, 3)
    x = mt.randn(2, 4)
    np.testing.assert_array_equal(layer(x).detach().cpu().numpy(), F.linear(x, layer.weight, layer.bias).detach().cpu().numpy())
