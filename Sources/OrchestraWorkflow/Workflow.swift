// Placeholder: the workflow model is being written.
