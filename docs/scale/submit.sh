#!/bin/bash
# Submits a sharded scan as a Slurm job array of N tasks (default 16) and the merge as a job that starts
# when every task has succeeded (--dependency=afterok). Prints the two job ids.
#
#   VZARR_INPUTS=inputs.txt VZARR_PARTS=/shared/tas-parts VZARR_STORE=/shared/tas.vzarr \
#       VZARR_CONCAT="--concat time" docs/scale/submit.sh 16
#
# Run it from the directory the job logs should go to. Extra sbatch options (partition, account,
# time limit): SBATCH_PARTITION, SBATCH_ACCOUNT, SBATCH_TIMELIMIT, as sbatch reads them.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
n=${1:-16}
: "${VZARR_INPUTS:?set VZARR_INPUTS to a file listing the inputs}"
: "${VZARR_PARTS:?set VZARR_PARTS to a shared directory for the parts}"
: "${VZARR_STORE:?set VZARR_STORE to the store to write}"
mkdir -p "$VZARR_PARTS"
scan=$(sbatch --parsable --export=ALL --array="0-$((n - 1))" "$here/scan-array.sbatch")
scan=${scan%%;*}
merge=$(sbatch --parsable --export=ALL --dependency="afterok:$scan" "$here/merge.sbatch")
echo "$scan ${merge%%;*}"
