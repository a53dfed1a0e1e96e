CREATE TABLE `session_revert` (
	`session_id` text NOT NULL,
	`from_seq` integer NOT NULL,
	`to_seq` integer NOT NULL,
	`message_id` text NOT NULL,
	`time_created` integer NOT NULL,
	PRIMARY KEY(`session_id`, `to_seq`),
	FOREIGN KEY (`session_id`) REFERENCES `session`(`id`) ON UPDATE no action ON DELETE cascade
);
