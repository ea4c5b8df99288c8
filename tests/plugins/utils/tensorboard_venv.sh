# Sourced by the TensorBoard reader tests: sets TB_PYTHON to a Python that has PyPI's
# tensorboard, from a venv in the build folder ($1), made and filled once, then reused.
# A failed install (no index, no python3-venv) fails the test: CI has the index, so a skip
# would hide a broken check.
tb_build_dir="$1"
tb_venv="$tb_build_dir/tensorboard-venv"
TB_PYTHON="$tb_venv/bin/python"
if ! "$TB_PYTHON" -c "import tensorboard" 2>/dev/null; then
  echo "installing tensorboard into $tb_venv (once)"
  rm -rf "$tb_venv"
  python3 -m venv "$tb_venv" || { echo "FAIL: python3 -m venv failed (python3-venv missing?)"; exit 1; }
  "$tb_venv/bin/pip" install -q tensorboard ||
    { echo "FAIL: pip could not install tensorboard"; exit 1; }
fi
"$TB_PYTHON" -c "import tensorboard; print('tensorboard', tensorboard.__version__)"
