# Sourced by scripts/serve and scripts/test: make the virtualenv and install Python packages
# into it with uv (from PyPI, several times faster than pip) when it can be had, and with pip
# otherwise.
#
#   relay_make_venv PYTHON VENV [--clear]   like `PYTHON -m venv [--clear] VENV`
#   relay_install VENV ARGS...              like `VENV/bin/python -m pip install ARGS...`
#
# uv is the one on PATH, else the virtualenv's own, else pip installs it into the virtualenv
# (the virtualenv's pip, or PYTHON's own pip aimed at it: a virtualenv made without pip saves
# ensurepip's ~20 s on a busy machine). uv reads no pip configuration, so the index pip is
# configured with (PIP_INDEX_URL, PIP_EXTRA_INDEX_URL, PIP_FIND_LINKS or pip.conf), its
# certificate (PIP_CERT) and PIP_NO_CACHE_DIR are handed to it. Any failure of uv falls back
# to pip (installing pip into the virtualenv first if it has none); RELAY_NO_UV=1 skips uv.

RELAY_PYTHON=${PYTHON:-python3}

relay_make_venv() {
  local python=$1 venv=$2
  shift 2
  RELAY_PYTHON=$python
  if [ "${RELAY_NO_UV:-}" != 1 ] && "$python" -m venv --without-pip "$@" "$venv" 2>/dev/null; then
    if RELAY_UV=$(relay_find_uv "$venv"); then
      return 0
    fi
    RELAY_UV=
  fi
  "$python" -m venv "$@" "$venv"
}

relay_install() {
  local venv=$1
  shift
  local uv
  if [ "${RELAY_NO_UV:-}" != 1 ] && uv=$(relay_find_uv "$venv"); then
    RELAY_UV=$uv # found once: a second virtualenv (scripts/test's wheel check) reuses it
    if relay_with_pip_config "$venv" "$uv" pip install -q --python "$venv/bin/python" "$@"; then
      return 0
    fi
    echo "uv could not install $*; installing with pip instead" >&2
  fi
  if ! "$venv/bin/python" -m pip --version >/dev/null 2>&1; then
    "$venv/bin/python" -m ensurepip >/dev/null
  fi
  "$venv/bin/python" -m pip install -q --disable-pip-version-check "$@"
}

relay_find_uv() { # print the path of a working uv, or fail
  local venv=$1 candidate
  for candidate in "${RELAY_UV:-}" "$(command -v uv 2>/dev/null || true)" "$venv/bin/uv"; do
    if [ -n "$candidate" ] && [ -x "$candidate" ] && "$candidate" --version >/dev/null 2>&1; then
      echo "$candidate"
      return 0
    fi
  done
  if "$venv/bin/python" -m pip --version >/dev/null 2>&1; then
    "$venv/bin/python" -m pip install -q --disable-pip-version-check uv >/dev/null 2>&1 || return 1
  else
    "$RELAY_PYTHON" -m pip --python "$venv/bin/python" install -q --disable-pip-version-check \
      uv >/dev/null 2>&1 || return 1
  fi
  "$venv/bin/uv" --version >/dev/null 2>&1 || return 1
  echo "$venv/bin/uv"
}

relay_pip_setting() { # relay_pip_setting VENV NAME: pip's configured value of NAME, if any
  "$1/bin/python" -m pip config get "global.$2" 2>/dev/null ||
    "$RELAY_PYTHON" -m pip config get "global.$2" 2>/dev/null || true
}

relay_with_pip_config() { # relay_with_pip_config VENV UV ARGS...: run UV ARGS... as pip would
  local venv=$1 uv=$2
  shift 2
  (
    if [ -z "${UV_DEFAULT_INDEX:-}${UV_INDEX_URL:-}" ]; then
      index=${PIP_INDEX_URL:-$(relay_pip_setting "$venv" index-url)}
      if [ -n "$index" ]; then export UV_DEFAULT_INDEX=$index; fi
    fi
    if [ -z "${UV_INDEX:-}${UV_EXTRA_INDEX_URL:-}" ]; then
      extra=${PIP_EXTRA_INDEX_URL:-$(relay_pip_setting "$venv" extra-index-url)}
      if [ -n "$extra" ]; then
        export UV_EXTRA_INDEX_URL=$extra
        # As pip does: the best version on any index (uv's default takes the first index
        # that has the package at all, and a partial mirror then hides newer releases).
        export UV_INDEX_STRATEGY=${UV_INDEX_STRATEGY:-unsafe-best-match}
      fi
    fi
    if [ -z "${UV_FIND_LINKS:-}" ]; then
      links=${PIP_FIND_LINKS:-$(relay_pip_setting "$venv" find-links)}
      if [ -n "$links" ]; then export UV_FIND_LINKS=$links; fi
    fi
    if [ -z "${SSL_CERT_FILE:-}" ] && [ -n "${PIP_CERT:-}" ]; then export SSL_CERT_FILE=$PIP_CERT; fi
    case "${PIP_NO_CACHE_DIR:-}" in 1 | true | yes | on) export UV_NO_CACHE=1 ;; esac
    # The cache may sit on another file system than the virtualenv: copy, without a warning.
    export UV_LINK_MODE=${UV_LINK_MODE:-copy}
    exec "$uv" "$@"
  )
}
