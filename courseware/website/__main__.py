import sys

from courseware.website import main

sys.exit(main())
