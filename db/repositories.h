// Every repository of db/, for callers that want them all (the service).
// Each is also usable alone from its own header.
#pragma once

#include "db/connection_pool.h"
#include "db/dataset_repository.h"
#include "db/job_output_repository.h"
#include "db/job_repository.h"
#include "db/pool_state_repository.h"
#include "db/token_repository.h"
#include "db/workload_repository.h"

namespace tpujobs::db {

struct Repositories {
  // The pool must outlive the repositories.
  explicit Repositories(ConnectionPool& pool)
      : jobs(pool), outputs(pool), datasets(pool), tokens(pool), pool_state(pool), workload(pool) {}

  JobRepository jobs;              // jobs, job_events
  JobOutputRepository outputs;     // job_logs, job_metrics, job_checkpoints
  DatasetRepository datasets;      // datasets
  TokenRepository tokens;          // api_tokens
  PoolStateRepository pool_state;  // pool_hosts, tenant_quotas
  WorkloadRepository workload;     // dependencies, usage
};

}  // namespace tpujobs::db
