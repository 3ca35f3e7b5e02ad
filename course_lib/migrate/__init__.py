"""For learners: migrating a network from PyTorch (lesson 07).

- ``convert.py``: weight conversion and the step-by-step comparison of the two frameworks;
- ``torch_resnet.py``: the PyTorch reference ResNet (torch is optional: imported only when used).
"""
