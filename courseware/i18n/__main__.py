import sys

from courseware.i18n.command import main

sys.exit(main(sys.argv[1:]))
