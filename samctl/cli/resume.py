"""samctl resume: the app's own command to go back into a session; --exec runs it."""

from __future__ import annotations

import os
import shutil
import sys

import click

from samctl.cli.common import complete_ids, emit_json, examples, findings_first, finish, report_findings, scope_of
from samctl.errors import NotFound, UsageError


@click.command("resume")
@click.argument("conversation_id", metavar="ID", shell_complete=complete_ids)
@click.option(
    "--exec", "run", is_flag=True, help="Run the command, in the session's folder (samctl is replaced by the app)."
)
@click.option("--format", "fmt", type=click.Choice(("text", "json")), default="text", show_default=True)
@examples("samctl resume 0b7c9d2e", "samctl resume 0b7c9d2e --exec", 'eval "$(samctl resume 0b7c9d2e)"')
@click.pass_context
def command(ctx, conversation_id, run, fmt):
    """Print the command that resumes conversation ID in its own app (claude --resume, codex resume,
    llm -c --cid), preceded by `cd DIR &&` when the app resumes a session from its folder. --exec runs
    it there instead.
    """
    from samctl.core.load import load_conversation
    from samctl.core.resume import resume_line, resume_of

    scope = scope_of(ctx)
    findings = scope.findings
    with findings_first(findings):
        [(store, conversation_id)] = scope.resolve([conversation_id])
    conv = load_conversation(store, conversation_id, findings)
    report_findings(findings)
    if conv is None:
        finish(findings)
        return
    resume = resume_of(store, conv.meta)
    if resume is None:
        raise UsageError(f"{store.app_name} has no command to resume a conversation ({conv.meta.id})")
    if not run:
        if fmt == "json":
            emit_json({"id": conv.meta.id, "store": store.name, **resume})
        else:
            click.echo(resume_line(resume))
        finish(findings)
        return
    cwd = resume["cwd"]
    if cwd is not None and not os.path.isdir(cwd):
        raise NotFound(
            f"the session's folder {cwd} is not there", hint=f"run `{resume['command']}` where the project is now"
        )
    exe = shutil.which(resume["argv"][0])
    if exe is None:
        raise NotFound(
            f"{resume['argv'][0]} is not on PATH", hint=f"install it, or run `{resume['command']}` where it is"
        )
    if cwd is not None:
        os.chdir(cwd)
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(exe, resume["argv"])
