-- 006_contracts: the contracts operations run under, by fingerprint, so
-- that every door acts on an operation under the contract it was created
-- with and needs no file. canonical is the merged contract as canonical
-- JSON (secret references only, never a secret); an operation's record
-- names it by contract_fingerprint. A row is written once and never
-- changed: its key is the hash of its bytes.

CREATE TABLE contracts (
    fingerprint TEXT NOT NULL PRIMARY KEY,
    name        TEXT NOT NULL,
    canonical   TEXT NOT NULL CHECK (json_valid(canonical))
) STRICT;

CREATE TRIGGER contracts_no_update BEFORE UPDATE ON contracts
BEGIN
    SELECT RAISE(ABORT, 'pollwarden: a stored contract is never changed');
END;
