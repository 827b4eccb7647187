"""The operator catalogue: a static site of every base operator, its life across releases and its
coverage per backend (`opdrift site`). Pure stages build the data and the pages; `write` is the one
place that touches the disk."""
