CREATE TABLE `instruction_checkpoint` (
	`session_id` text PRIMARY KEY NOT NULL,
	`baseline_text` text NOT NULL,
	`baseline_seq` integer NOT NULL,
	`applied` text NOT NULL,
	`compaction_seq` integer,
	`revision` integer NOT NULL,
	`time_created` integer NOT NULL,
	`time_updated` integer NOT NULL,
	FOREIGN KEY (`session_id`) REFERENCES `session`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `instruction_entry` (
	`session_id` text NOT NULL,
	`key` text NOT NULL,
	`value` text NOT NULL,
	`time_updated` integer NOT NULL,
	PRIMARY KEY(`session_id`, `key`),
	FOREIGN KEY (`session_id`) REFERENCES `session`(`id`) ON UPDATE no action ON DELETE cascade
);
