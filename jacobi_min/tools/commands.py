"""jacobi-min commands: `python -m jacobi_min <command> --help` for each one's arguments."""
import argparse
import sys

from . import bench, demo, exactness, figures, generate, pipeline, recipe, tiny

# Each module registers its own commands (arguments beside the code they configure), in this order:
OWNERS = (
    demo,        # demo, animate: the embedded models at work
    generate,    # generate: decode your own prompt
    tiny,        # train-base: the embedded base model
    pipeline,    # collect, train, pipeline: trajectories, one training run, and every model in one command
    bench,       # bench, eval, cost-model: the measurements
    recipe,      # recipe: Jacobi Forcing on the real Qwen
    exactness,   # exactness: every decoder against generate on real prompts
    figures,     # figures: every PNG from the results files
)


def build_parser() -> argparse.ArgumentParser:
    """Every command and its arguments; the epilog lists every command's usage."""
    parser = argparse.ArgumentParser(prog="python -m jacobi_min", description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    commands = parser.add_subparsers(dest="command", required=True)
    for module in OWNERS:
        module.add_commands(commands)
    parser.epilog = "arguments of every command:\n" + "".join(
        "  " + sub.format_usage().replace("usage: ", "") for sub in commands.choices.values())
    return parser


def main(argv=None):
    """Run one command; a bad input (a ValueError or a missing file) ends with its message, not a traceback."""
    argv = sys.argv[1:] if argv is None else argv
    args = build_parser().parse_args(argv)
    try:
        args.run(args)
    except (ValueError, FileNotFoundError) as err:
        sys.exit(f"error: {err}")
