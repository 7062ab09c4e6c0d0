"""EDIT ME: how v01_reference is structured, in a few sentences.

The report prints this text as the answer to "How is the code structured". A first version
is often the plainest correct implementation, timed as the baseline the later versions
are measured against. Replace this whole docstring.
"""

from assignment import ref_kernel


def custom_kernel(data):
    # the reference itself, until v01_reference has code of its own
    return ref_kernel(data)
