-- Activities of every organization by time: the dashboard's overview, charts and failed feed
-- read the newest activities of the whole server (a range of created_at, newest first, without
-- an organization). Without this index each of those page views scanned every activity.
CREATE INDEX activities_created ON activities (created_at, id);
