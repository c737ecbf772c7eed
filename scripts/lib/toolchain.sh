# The Debian toolchain install shared by scripts/test-aarch64.sh,
# scripts/test-windows.sh and scripts/check-hosts.sh (sourced, not run).
#
# Before sourcing, set STEP_TAG (the tag of the script's step lines). Then:
#   step TEXT...                 prints a step line: `== [TAG] TEXT`
#   elapsed                      seconds since sourcing, e.g. `42s`
#   same_versions PKG...         true when the installed Debian versions of the
#                                packages are all known and equal (a compiler
#                                and its standard library or clippy must match)
#   ensure_packages SKIP_VAR PKG...
#                                installs the packages (idempotent) when the
#                                caller's `missing` function says something is
#                                missing, adding the foreign architecture of any
#                                `pkg:arch` first; fails without apt when the
#                                variable named SKIP_VAR is 1, and when
#                                something is still missing afterwards.

toolchain_start=$(date +%s)

step() { printf '\n== [%s] %s\n' "$STEP_TAG" "$*"; }

elapsed() { echo "$(($(date +%s) - toolchain_start))s"; }

same_versions() {
    local first version
    first=$(dpkg-query -W -f='${Version}' "$1" 2>/dev/null || true)
    [[ -n $first ]] || return 1
    for pkg in "${@:2}"; do
        version=$(dpkg-query -W -f='${Version}' "$pkg" 2>/dev/null || true)
        [[ $version == "$first" ]] || return 1
    done
}

ensure_packages() {
    local skip_var=$1
    shift
    if ! missing; then
        echo "all present ($*), skipping apt"
        return 0
    fi
    if [[ ${!skip_var:-0} == 1 ]]; then
        echo "missing packages and $skip_var=1: need $*" >&2
        exit 1
    fi
    local sudo=() pkg arch
    if [[ $(id -u) != 0 ]]; then sudo=(sudo -n); fi
    export DEBIAN_FRONTEND=noninteractive
    for pkg in "$@"; do
        [[ $pkg == *:* ]] || continue
        arch=${pkg##*:}
        if ! dpkg --print-foreign-architectures | grep -qx "$arch"; then
            echo "dpkg --add-architecture $arch"
            "${sudo[@]}" dpkg --add-architecture "$arch"
        fi
    done
    echo "apt-get update"
    "${sudo[@]}" apt-get update -q
    echo "apt-get install $*"
    "${sudo[@]}" apt-get install -y -q --no-install-recommends "$@"
    if missing; then
        echo "toolchain still incomplete after apt-get install" >&2
        exit 1
    fi
}
