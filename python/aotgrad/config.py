"""aotgrad's Python settings.

strict: a graph aotgrad cannot take raises instead of going to PyTorch's own partitioner with a
warning.
"""
strict = False
