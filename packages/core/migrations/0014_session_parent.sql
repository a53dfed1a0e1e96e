ALTER TABLE `session` ADD `parent_id` text;--> statement-breakpoint
CREATE INDEX `session_parent_id_idx` ON `session` (`parent_id`);--> statement-breakpoint
-- Backfill from the JSON records written before the column.
UPDATE `session` SET `parent_id` = json_extract(`info`, '$.parentID');
