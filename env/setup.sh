#!/usr/bin/env bash
# Creates or refreshes the course environment in $VENV from env/requirements.lock.
# Usage: env/setup.sh [lab|test]   (test also needs the headless browser)
# Re-running is cheap: the install is skipped while the lock's hash matches the stamp.
set -euo pipefail
cd "$(dirname "$0")/.."
purpose=${1:-lab}
VENV=${VENV:-.venv}
PYTHON=${PYTHON:-python3}
LOCK=env/requirements.lock
STAMP=$VENV/.lock-sha256
# The course's kernel, as course.json names it (the notebooks' metadata and the labs read it there)
course_kernel() { "$PYTHON" -c 'import json, sys; print(json.load(open("course.json"))["kernel"][sys.argv[1]])' "$1"; }
KERNEL_NAME=$(course_kernel name)
KERNEL_DISPLAY=$(course_kernel display_name)

say() { printf '[setup] %s\n' "$*"; }
die() { printf '[setup] ERROR: %s\n' "$*" >&2; exit 1; }

can_apt() { [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; }
apt_updated=
apt_update() {  # apt-get update does not wait for a lock another apt-get holds: try again
    local tries
    for tries in 1 2 3 4 5 6 7 8 9 10 11 12; do
        apt-get update -qq >/dev/null 2>&1 && return 0
        sleep 5
    done
    apt-get update -qq >/dev/null  # the last try shows why it fails
}
apt_install() {  # install waits for the lock of another apt-get (a setup started beside this one)
    [ -n "$apt_updated" ] || { apt_update; apt_updated=1; }
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        -o DPkg::Lock::Timeout=300 "$@" >/dev/null
}

ensure_system_tool() {  # ensure_system_tool BINARY DEBIAN_PACKAGE REQUIRED HINT
    local binary=$1 package=$2 required=$3 hint=$4
    command -v "$binary" >/dev/null && return 0
    if can_apt; then
        say "installing $package (for $binary) with apt-get"
        apt_install "$package" && command -v "$binary" >/dev/null && return 0
    fi
    if [ "$required" = yes ]; then
        die "'$binary' is missing. $hint"
    fi
    say "WARNING: '$binary' is missing. $hint"
}

check_python() {
    "$PYTHON" -c 'import sys; sys.exit(sys.version_info[:2] < (3, 11))' 2>/dev/null ||
        die "$PYTHON must be Python 3.11 or newer (set PYTHON=/path/to/python3.11)."
}

ensure_venv_module() {  # Debian and Ubuntu ship `venv`/`ensurepip` as a package of their own
    local version
    "$PYTHON" -c 'import ensurepip, venv' 2>/dev/null && return 0
    if can_apt; then
        version=$("$PYTHON" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
        say "installing python$version-venv (for '$PYTHON -m venv') with apt-get"
        apt_install "python$version-venv" 2>/dev/null || apt_install python3-venv 2>/dev/null || true
        "$PYTHON" -c 'import ensurepip, venv' 2>/dev/null && return 0
    fi
    die "$PYTHON cannot create virtual environments. On Debian/Ubuntu: 'sudo apt-get install python3-venv'; or set PYTHON=/path/to/another/python3.11+."
}

install_stamp() {  # the lock and the project's own packaging (what `-e .` installs)
    cat "$LOCK" pyproject.toml 2>/dev/null | sha256sum | cut -d' ' -f1
}

install_packages() {
    say "installing the locked packages into $VENV (first time: several GB, a few minutes)"
    if ! "$VENV/bin/python" -m pip --version >/dev/null 2>&1; then  # none yet, or a broken one
        ensure_venv_module
        "$PYTHON" -m venv --clear "$VENV"
    fi
    local uv_pin
    uv_pin=$(grep -E '^uv==' "$LOCK")
    "$VENV/bin/python" -m pip install -q --disable-pip-version-check "$uv_pin"
    # Bytecode now, once: where PYTHONDONTWRITEBYTECODE is set (CI images often set it), every
    # kernel would otherwise compile torch's modules again (12 s instead of 5 s to import).
    UV_COMPILE_BYTECODE=${UV_COMPILE_BYTECODE:-1} \
        "$VENV/bin/uv" pip sync -q --python "$VENV/bin/python" "$LOCK"
    "$VENV/bin/uv" pip install -q --python "$VENV/bin/python" --no-deps -e .
    "$VENV/bin/python" -m ipykernel install --sys-prefix \
        --name "$KERNEL_NAME" --display-name "$KERNEL_DISPLAY" >/dev/null
    enable_nbgrader_extensions
    install_stamp >"$STAMP"
}

enable_nbgrader_extensions() {
    # The full course needs nothing here: nbgrader's package installs
    # etc/jupyter/jupyter_server_config.d/nbgrader.json, which enables its four server extensions
    # (the formgrader too, for `make formgrader`).
    [ -d grader ] && return
    # A student edition: the learner's parts of nbgrader only (Assignments tab, Validate button).
    # One command per switch, naming every extension (each start imports Jupyter: seconds).
    # `jupyter server extension enable` exits 0 even when an extension fails its validation:
    # read what it says.
    local jupyter="$VENV/bin/jupyter" server=nbgrader.server_extensions said
    said=$("$jupyter" server extension enable --sys-prefix \
        "$server.assignment_list" "$server.course_list" "$server.validate_assignment" 2>&1)
    if printf '%s' "$said" | grep -q "Validation failed"; then
        printf '%s\n' "$said" >&2
        die "nbgrader's Assignments tab or Validate button could not be enabled (above)"
    fi
    "$jupyter" server extension disable --sys-prefix "$server.formgrader" >/dev/null 2>&1
    "$jupyter" labextension disable --level=sys_prefix \
        "@jupyter/nbgrader:formgrader" "@jupyter/nbgrader:create-assignment" >/dev/null 2>&1
}

ensure_fonts() {  # the browser tests read every edition: a script without a font shows boxes
    local code package
    # fxcourse/languages.py names each language's font (standard library only: no venv needed)
    python3 -m fxcourse.languages fonts | while read -r code package; do
        [ -n "$(fc-list ":lang=$code" 2>/dev/null)" ] && continue
        if can_apt; then
            say "installing $package (a font for the $code pages, for the browser tests) with apt-get"
            apt_install "$package" && continue
        fi
        say "WARNING: no font for $code: its pages' screenshots show boxes. Install one: 'sudo apt-get install $package'."
    done
}

check_python
cxx_hint="Chapters 6 to 9 compile with Inductor, which needs a C++ compiler: 'sudo apt-get install g++' (Debian/Ubuntu), 'xcode-select --install' (macOS) or 'conda install -c conda-forge cxx-compiler'."
graphviz_hint="Install Graphviz: 'sudo apt-get install graphviz' (Debian/Ubuntu), 'brew install graphviz' (macOS) or 'conda install -c conda-forge graphviz'. Without it graph pictures fall back to text."
if [ "$purpose" = test ]; then
    ensure_system_tool dot graphviz yes "$graphviz_hint"
    [ -x "${FXCOURSE_CHROMIUM:-}" ] || ensure_system_tool chromium chromium yes \
        "The browser tests need Chromium: 'sudo apt-get install chromium' (Debian), or FXCOURSE_CHROMIUM=/path/to/chromium."
    [ ! -d grader ] || ensure_system_tool bwrap bubblewrap yes \
        "The sandboxed grader needs bubblewrap: 'sudo apt-get install bubblewrap'."
    ensure_fonts
    ensure_system_tool g++ g++ yes "$cxx_hint"
else
    ensure_system_tool g++ g++ no "$cxx_hint"
    ensure_system_tool dot graphviz no "$graphviz_hint"
    [ ! -d grader ] || ensure_system_tool bwrap bubblewrap no \
        "Only instructors need it: 'make autograde' runs submissions inside bubblewrap ('sudo apt-get install bubblewrap')."
fi

want=$(install_stamp)
have=$(cat "$STAMP" 2>/dev/null || true)
if [ "$want" != "$have" ] || [ ! -x "$VENV/bin/jupyter" ]; then
    install_packages
else
    say "environment up to date ($VENV matches $LOCK)"
fi
