import sys

from fxcourse.website import main

sys.exit(main())
