"""The document model: the tree, its paths and path-set operators, table layout, rendering."""
