"""The tooling around the method: the task, the tiny base model, the real Qwen, evaluation, benchmarks,
figures, the pipeline and the command line. It imports the method (`jacobi_min`); the method never imports it."""
