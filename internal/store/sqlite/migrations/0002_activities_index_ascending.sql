-- The organization/time index of activities, rebuilt in ascending order. New activities have
-- the latest created_at of their organization: in a descending index each was inserted at the
-- front of its organization's range, splitting pages in the middle of the B-tree; ascending, it
-- is appended at the end of the range (and of the tree, for the busiest organization), where
-- SQLite splits pages cheaply. Lists newest-first read the index backwards, as fast.
DROP INDEX activities_org_created;
CREATE INDEX activities_org_created ON activities (org_id, created_at, id);
