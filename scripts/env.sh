# Source this file to use the stack in the current shell: . scripts/env.sh
# (the venv, the installed ROS package and its interface libraries).
_pp_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
_pp_venv=${PARAPUSH_VENV:-$_pp_root/.venv}
# shellcheck disable=SC1091
. "$_pp_venv/bin/activate"
_pp_prefix=$_pp_root/install
# src/ first so the working tree wins over the copy ament installed into the prefix.
export PYTHONPATH="$_pp_root/src:$_pp_prefix/lib/python3.11/site-packages${PYTHONPATH:+:$PYTHONPATH}"
export LD_LIBRARY_PATH="$_pp_prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export AMENT_PREFIX_PATH="$_pp_prefix:$_pp_venv${AMENT_PREFIX_PATH:+:$AMENT_PREFIX_PATH}"
export RMW_IMPLEMENTATION=${RMW_IMPLEMENTATION:-rmw_fastrtps_cpp}
# Small matrices everywhere (the learned coarse model's batches): threaded BLAS only contends
# with the fine-model workers for the cores (measured 10-70x slower batches when loaded).
export OPENBLAS_NUM_THREADS=${OPENBLAS_NUM_THREADS:-1}
unset _pp_root _pp_venv _pp_prefix
