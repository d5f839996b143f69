#!/usr/bin/env bash
# `make test-latest` / `make test-oldest`: a second environment, resolved without the lock
# (torch held at the build on disk), with the transformers named in $2; it runs the capture
# and fidelity tiers and the zoo, and writes docs/tracks/$1.md (exit 1 when the track is red).
set -uo pipefail
cd "$(dirname "$0")/.."
track=$1
spec=$2
venv=.venv-$track
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 PIP_DISABLE_PIP_VERSION_CHECK=1
rm -rf "$venv"
python3 -m venv "$venv"
"$venv/bin/python" -m pip install -q --upgrade pip
"$venv/bin/python" -m pip install -q -c .ci/torch.txt torch
SKIP_JUPYTER_BUILDER=1 "$venv/bin/python" -m pip install -q -c .ci/torch.txt --upgrade \
  -e ".[tiers]" "$spec" || exit 1
echo "track $track: transformers $("$venv/bin/python" -c 'import transformers; print(transformers.__version__)')"
"$venv/bin/python" -m pytest -q -p no:cacheprovider -o addopts="" \
  $(ls tests/test_capture_*.py | grep -v test_capture_zoo.py) \
  tests/test_attention_on_demand.py tests/test_trace.py > "$venv/pytest.log" 2>&1
tail -3 "$venv/pytest.log"
"$venv/bin/python" tests/zoo_run.py > "$venv/zoo.jsonl"
mkdir -p docs/tracks
"$venv/bin/python" tests/track_report.py "$track" "$venv/zoo.jsonl" "$venv/pytest.log" \
  > "docs/tracks/$track.md"
status=$?
cat "docs/tracks/$track.md"
exit $status
