-- 004_operation_job: find the operations of a contract waiting on one
-- provider job, for a provider callback ("job X ended"), with one index
-- seek instead of a scan of every operation.

CREATE INDEX operations_job ON operations (contract, provider_job_id);
