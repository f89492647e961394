-- Users by name in every organization: the key user.name_any holds a user's name as given, so
-- that list_suborgs filtered by USERNAME pages through a parent's sub-organizations holding a
-- user of that name in one query (store.ListOptions.OwnerOf) instead of looking the name up in
-- each of them. directory.SaveUser writes the key from now on; this gives it to the users stored
-- before, from their user.name key (organization id "/" name: organization ids hold no "/").
INSERT OR IGNORE INTO record_keys (name, value, kind, id, org_id, uniq)
SELECT 'user.name_any', substr(value, instr(value, '/') + 1), kind, id, org_id, 0
FROM record_keys
WHERE name = 'user.name' AND instr(value, '/') > 0;
