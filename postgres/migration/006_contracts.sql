-- 006_contracts: the contracts operations run under, by fingerprint, so
-- that every door acts on an operation under the contract it was created
-- with and needs no file. canonical is the merged contract as canonical
-- JSON, kept as text so its bytes (and so its fingerprint) stay exact;
-- secret references only, never a secret. An operation's record names it
-- by contract_fingerprint. A row is written once and never changed.

CREATE TABLE contracts (
    fingerprint TEXT NOT NULL PRIMARY KEY,
    name        TEXT NOT NULL,
    canonical   TEXT NOT NULL
);

CREATE FUNCTION contracts_fixed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    RAISE EXCEPTION 'pollwarden: a stored contract is never changed';
END;
$$;

CREATE TRIGGER contracts_no_update BEFORE UPDATE ON contracts
    FOR EACH ROW EXECUTE FUNCTION contracts_fixed();
