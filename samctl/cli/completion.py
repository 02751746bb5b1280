"""samctl completion: the shell completion script, from click's own machinery."""

from __future__ import annotations

import click

from samctl.cli.common import examples

SHELLS = ("bash", "zsh", "fish")


@click.command("completion")
@click.argument("shell", type=click.Choice(SHELLS))
@examples(
    'eval "$(samctl completion bash)"          # in ~/.bashrc',
    'eval "$(samctl completion zsh)"           # in ~/.zshrc',
    "samctl completion fish > ~/.config/fish/completions/samctl.fish",
)
def command(shell):
    """Print the completion script for SHELL (bash, zsh or fish).

    It completes commands, options and conversation ids (read from the store given with
    --root or SAMCTL_ROOT, or the default one). bash needs version 4.4 or later.
    """
    from click.shell_completion import get_completion_class

    from samctl.cli import cli

    comp_cls = get_completion_class(shell)
    comp = comp_cls(cli, {}, "samctl", "_SAMCTL_COMPLETE")
    click.echo(comp.source())
