# SPDX-License-Identifier: Apache-2.0
# bash completion for shoal(1): commands, each command's options (read
# from its --help, so they are always those of the installed shoal), the
# subcommands of node, admin, team, project, user, volume, secret and
# slice, job ids (of `shoal queue --json`) and node names (of
# `shoal nodes --json`) where a command takes them. Installed as
# /usr/share/bash-completion/completions/shoal.

# The words of `shoal CMD --help` that are long options.
_shoal_options()
{
    "$1" "${@:2}" --help 2>&1 | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u
}

# Commands: the first words of the command list of `shoal --help`.
_shoal_commands()
{
    "$1" --help 2>&1 | sed -n 's/^  \([a-z][a-z-]*\) .*/\1/p'
}

# Ids of the jobs in the queue (top-level "id" of each job).
_shoal_job_ids()
{
    "$1" queue --json 2>/dev/null | sed -n 's/^    "id": \([0-9]*\).*/\1/p'
}

_shoal_node_names()
{
    "$1" nodes --json 2>/dev/null | sed -n 's/^    "name": "\([^"]*\)".*/\1/p'
}

_shoal()
{
    local cur prev shoal=${COMP_WORDS[0]}
    cur=${COMP_WORDS[COMP_CWORD]}
    prev=${COMP_WORDS[COMP_CWORD - 1]}
    COMPREPLY=()
    if [ "$COMP_CWORD" -eq 1 ]; then
        mapfile -t COMPREPLY < <(compgen -W "$(_shoal_commands "$shoal") --help" -- "$cur")
        return
    fi
    local cmd=${COMP_WORDS[1]} sub=
    [ "$COMP_CWORD" -gt 2 ] && sub=${COMP_WORDS[2]}
    # Options that take a file.
    case $prev in
    --from-file | --output | --error | --trace | --script | --chdir | --workdir | -o | -e)
        mapfile -t COMPREPLY < <(compgen -f -- "$cur")
        return
        ;;
    esac
    if [[ $cur == -* ]]; then
        local opts
        case $cmd in
        node | admin | team | project | user | volume | secret | slice)
            opts=$(_shoal_options "$shoal" "$cmd" ${sub:+"$sub"})
            ;;
        *) opts=$(_shoal_options "$shoal" "$cmd") ;;
        esac
        mapfile -t COMPREPLY < <(compgen -W "$opts" -- "$cur")
        return
    fi
    local words=
    case $cmd in
    show | cancel | hold | release | update | requeue | logs)
        words=$(_shoal_job_ids "$shoal")
        ;;
    node)
        if [ "$COMP_CWORD" -eq 2 ]; then
            words="drain resume"
        else
            words=$(_shoal_node_names "$shoal")
        fi
        ;;
    nodes) ;;
    admin)
        if [ "$COMP_CWORD" -eq 2 ]; then
            words=backup
        else
            mapfile -t COMPREPLY < <(compgen -f -- "$cur")
            return
        fi
        ;;
    team | project | user | volume | secret | slice)
        if [ "$COMP_CWORD" -eq 2 ]; then
            # The subcommands named in the usage lines.
            words=$("$shoal" "$cmd" --help 2>&1 |
                sed -n "s/^ *\(Usage: \)\{0,1\}shoal $cmd \([a-z][a-z-]*\).*/\2/p" | sort -u)
        fi
        ;;
    submit | sbatch | sim)
        mapfile -t COMPREPLY < <(compgen -f -- "$cur")
        return
        ;;
    esac
    mapfile -t COMPREPLY < <(compgen -W "$words" -- "$cur")
}
complete -F _shoal shoal
