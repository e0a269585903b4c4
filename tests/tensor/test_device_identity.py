"""A device is one shared object: copies and pickles of tensors stay on the very same device."""

import copy
import pickle

import minigrad.tensor as mt


def test_copies_and_pickles_keep_the_shared_device():
    x = mt.randn(3)
    assert copy.deepcopy(x).device is x.device
    assert copy.copy(x.device) is x.device
    assert pickle.loads(pickle.dumps(x.device)) is x.device
    assert pickle.loads(pickle.dumps(x)).device is x.device
