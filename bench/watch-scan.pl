# Fills a public-inbox v2 inbox with N mails that are no patch (replies
# and discussion, as most of a list is), through public-inbox's own writer
# (PublicInbox::V2Writable, what public-inbox-mda and -learn use), in one
# process: one public-inbox-mda per mail would take most of an hour.
#   perl bench/watch-scan.pl INBOX N
use strict;
use PublicInbox::Config;
use PublicInbox::InboxWritable;
use PublicInbox::V2Writable;
use PublicInbox::Eml;
my ($dir, $n) = @ARGV;
my $ibx = PublicInbox::InboxWritable->new({ inboxdir => $dir, name => 'list', version => 2, address => ['list@example.org'], indexlevel => 'basic' });
my $w = PublicInbox::V2Writable->new($ibx);
for my $i (1..$n) {
	my $eml = PublicInbox::Eml->new("From: Dev $i <dev$i\@example.org>\nTo: list\@example.org\nSubject: Re: a discussion $i\nMessage-ID: <m$i\@example.org>\nDate: Thu, 03 Dec 2026 10:00:00 +0000\n\nsome text $i\n");
	$w->add($eml) or die "add $i";
}
$w->done;
