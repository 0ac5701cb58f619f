"""`perfforge eval`: the original, the human-optimised reference and each model configuration, measured on suites
of tasks and reported (docs/eval.md).

    config.py          EvalConfig, mirrored by the command line
    suites.py          which tasks: the catalogue's held-out instances, mined tasks, a user's directory
    configurations.py  which models: base, LoRA adapters, endpoints; the one vLLM server that answers for them
    runner.py          measure each task once, run the optimisation loop per configuration, variant and seed
    results.py         the results.parquet table, keyed and rewritten atomically
    metrics.py         correctness, fast_p, geometric means with CIs, roofline share, ablations, generalisation
    plots.py, report.py   the Markdown and self-contained HTML report

eval drives inference's public entry points (inference.loop.optimize, its judges and bundles) and profiling's
validator; it never runs generated code itself.
"""
