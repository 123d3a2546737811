"""Each exercise's own declaration and references, one module or package per exercise."""
