#!/bin/bash
# Submits a sharded scan as an AWS Batch array job of N children (default 16) and the merge as a job
# that depends on the whole array (it starts when every child has succeeded). Prints the two job ids.
#
#   aws batch register-job-definition --cli-input-json file://docs/scale/aws-batch-job-definition.json
#   QUEUE=my-queue docs/scale/aws-batch-submit.sh 16
#
# Each child reads AWS_BATCH_JOB_ARRAY_INDEX and AWS_BATCH_JOB_ARRAY_SIZE (printed as "shard I/16 (AWS
# Batch job array: ...)") and writes its part under the job definition's `parts` parameter, on EFS;
# a retried child replaces its part. The merge reuses the job definition with another command.
set -euo pipefail
: "${QUEUE:?set QUEUE to the job queue}"
n=${1:-16}
definition=${DEFINITION:-vzarr}
# The merge's own command: the same --concat as the job definition's scan, and where the store goes.
concat=${CONCAT:-time}
# PARTS and STORE may be S3 URLs instead of EFS paths (PARTS=s3://bucket/run STORE=s3://bucket/tas.vzarr;
# the job definition's `parts` parameter then s3://bucket/run/): parts and store are uploaded atomically.
parts=${PARTS:-/mnt/work/parts}
store=${STORE:-/mnt/work/tas.vzarr}
scan=$(aws batch submit-job --job-name vzarr-scan --job-queue "$QUEUE" --job-definition "$definition" \
  --array-properties "size=$n" --query jobId --output text)
merge=$(aws batch submit-job --job-name vzarr-merge --job-queue "$QUEUE" --job-definition "$definition" \
  --depends-on "jobId=$scan" \
  --container-overrides "{\"command\": [\"vzarr\", \"merge\", \"$parts/*.vzpart\", \"--concat\", \"$concat\", \"-o\", \"$store\", \"--overwrite\"]}" \
  --query jobId --output text)
echo "$scan $merge"
